"""Super-resolution with a sub-pixel convolution network (ESPCN: convolutions, then
``nn.PixelShuffle`` to trade channels for resolution; orthogonal init with the ReLU gain), MSE
loss, Adam, and PSNR on held-out images, as an ordinary PyTorch script.

The images are synthetic: smooth random fields (sums of a few sinusoids); the low-resolution
inputs are their average-pooled copies.

    python super_resolution.py --device cpu --upscale_factor 2 --nEpochs 3
"""
import argparse
from math import log10

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.init as init
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, upscale_factor):
        super(Net, self).__init__()

        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 32, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(32, 32, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(32, 16, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(16, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

        self._initialize_weights()

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        x = self.pixel_shuffle(self.conv4(x))
        return x

    def _initialize_weights(self):
        init.orthogonal_(self.conv1.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv2.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv3.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv4.weight)


def smooth_images(n, size, generator):
    xs = torch.linspace(0, 1, size)
    yy, xx = torch.meshgrid(xs, xs, indexing='ij')
    images = torch.zeros(n, 1, size, size)
    for _ in range(3):
        fx, fy, phase = torch.rand(3, n, 1, 1, generator=generator) * torch.tensor([8.0, 8.0, 6.28]).view(3, 1, 1, 1)
        images[:, 0] += torch.sin(fx * xx + fy * yy + phase)
    return (images / 6 + 0.5).clamp(0, 1)


def main():
    # Training settings
    parser = argparse.ArgumentParser(description='Sub-pixel super-resolution on synthetic images')
    parser.add_argument('--upscale_factor', type=int, default=2, help="super resolution upscale factor")
    parser.add_argument('--crop_size', type=int, default=24)
    parser.add_argument('--batchSize', type=int, default=16, help='training batch size')
    parser.add_argument('--testBatchSize', type=int, default=32, help='testing batch size')
    parser.add_argument('--nEpochs', type=int, default=3, help='number of epochs to train for')
    parser.add_argument('--lr', type=float, default=0.001, help='Learning Rate. Default=0.001')
    parser.add_argument('--seed', type=int, default=123, help='random seed to use. Default=123')
    parser.add_argument('--device', default=None, help='default: the current accelerator, else cpu')
    opt = parser.parse_args()
    print(opt)

    torch.manual_seed(opt.seed)
    if opt.device is not None:
        device = torch.device(opt.device)
    elif torch.accelerator.is_available():
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    print('===> Loading datasets')
    g = torch.Generator().manual_seed(opt.seed)
    hr = smooth_images(160, opt.crop_size, g)
    lr = F.avg_pool2d(hr, opt.upscale_factor)
    training_data_loader = DataLoader(dataset=TensorDataset(lr[:128], hr[:128]), batch_size=opt.batchSize,
                                      shuffle=True)
    testing_data_loader = DataLoader(dataset=TensorDataset(lr[128:], hr[128:]), batch_size=opt.testBatchSize,
                                     shuffle=False)

    print('===> Building model')
    model = Net(upscale_factor=opt.upscale_factor).to(device)
    criterion = nn.MSELoss()

    optimizer = optim.Adam(model.parameters(), lr=opt.lr)

    def train(epoch):
        epoch_loss = 0
        for iteration, batch in enumerate(training_data_loader, 1):
            input, target = batch[0].to(device), batch[1].to(device)

            optimizer.zero_grad()
            loss = criterion(model(input), target)
            epoch_loss += loss.item()
            loss.backward()
            optimizer.step()

        print("===> Epoch {} Complete: Avg. Loss: {:.4f}".format(epoch, epoch_loss / len(training_data_loader)))

    def test():
        avg_psnr = 0
        avg_mse = 0
        with torch.no_grad():
            for batch in testing_data_loader:
                input, target = batch[0].to(device), batch[1].to(device)

                prediction = model(input)
                mse = criterion(prediction, target)
                psnr = 10 * log10(1 / mse.item())
                avg_psnr += psnr
                avg_mse += mse.item()
        print("===> Avg. PSNR: {:.4f} dB".format(avg_psnr / len(testing_data_loader)))
        return avg_mse / len(testing_data_loader)

    first = test()
    for epoch in range(1, opt.nEpochs + 1):
        train(epoch)
        last = test()
    assert last < first, (first, last)
    print(f"loss fell: {first:.4f} -> {last:.4f}")


if __name__ == "__main__":
    main()
