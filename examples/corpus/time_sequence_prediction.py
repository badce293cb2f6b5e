"""Time-series prediction: two stacked ``nn.LSTMCell``s unrolled by hand over sine waves in
double precision, trained with L-BFGS and a closure, then predicting the future beyond the
input, as an ordinary PyTorch script.

The data: sine waves of random phase, generated in the script.

    python time_sequence_prediction.py --device cpu --steps 3
"""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim


class Sequence(nn.Module):
    def __init__(self, hidden=24):
        super(Sequence, self).__init__()
        self.hidden = hidden
        self.lstm1 = nn.LSTMCell(1, hidden)
        self.lstm2 = nn.LSTMCell(hidden, hidden)
        self.linear = nn.Linear(hidden, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double, device=input.device)
        c_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double, device=input.device)
        h_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double, device=input.device)
        c_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double, device=input.device)

        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(future):  # if we should predict the future
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        outputs = torch.cat(outputs, dim=1)
        return outputs


def sine_waves(n, length, period, seed):
    rs = np.random.RandomState(seed)
    x = np.empty((n, length), 'int64')
    x[:] = np.array(range(length)) + rs.randint(-4 * period, 4 * period, n).reshape(n, 1)
    return np.sin(x / 1.0 / period).astype('float64')


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--steps', type=int, default=3, help='steps to run')
    parser.add_argument('--samples', type=int, default=20)
    parser.add_argument('--length', type=int, default=40)
    parser.add_argument('--future', type=int, default=20)
    parser.add_argument('--device', default=None, help='default: the current accelerator, else cpu')
    opt = parser.parse_args()
    # set random seed to 0
    np.random.seed(0)
    torch.manual_seed(0)
    if opt.device is not None:
        device = torch.device(opt.device)
    elif torch.accelerator.is_available():
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    # load data and make training set
    data = sine_waves(opt.samples, opt.length, period=5, seed=2)
    input = torch.from_numpy(data[3:, :-1]).to(device)
    target = torch.from_numpy(data[3:, 1:]).to(device)
    test_input = torch.from_numpy(data[:3, :-1]).to(device)
    test_target = torch.from_numpy(data[:3, 1:]).to(device)
    # build the model
    seq = Sequence().to(device)
    seq.double()
    criterion = nn.MSELoss()
    # use LBFGS as optimizer since we can load the whole data to train
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8, max_iter=8)

    with torch.no_grad():
        first = criterion(seq(test_input), test_target).item()
    print('test loss before training:', first)
    # begin to train
    for i in range(opt.steps):
        print('STEP: ', i)

        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            print('loss:', loss.item())
            loss.backward()
            return loss
        optimizer.step(closure)
        # begin to predict, no need to track gradient here
        with torch.no_grad():
            future = opt.future
            pred = seq(test_input, future=future)
            loss = criterion(pred[:, :-future], test_target)
            print('test loss:', loss.item())
            y = pred.detach().cpu().numpy()
    assert y.shape == (3, opt.length - 1 + opt.future)
    last = loss.item()
    assert last < first, (first, last)
    print(f"loss fell: {first:.4f} -> {last:.4f}")


if __name__ == '__main__':
    main()
