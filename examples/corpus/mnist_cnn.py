"""An MNIST-style CNN classifier (two convolutions, max pooling, dropout, log-softmax and NLL
loss, Adadelta with a StepLR schedule), written as an ordinary PyTorch script.

The images are synthetic: ten fixed random 28x28 "digit" templates, each sample one of them
shifted by a pixel or two, with noise. Nothing is downloaded.

    python mnist_cnn.py                 # on the current accelerator, else the CPU
    python mnist_cnn.py --device cpu --epochs 3
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(2304, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def synthetic_digits(n, generator):
    templates = (torch.rand(10, 1, 28, 28, generator=generator) > 0.7).float()
    labels = torch.randint(0, 10, (n,), generator=generator)
    images = templates[labels]
    shifts = torch.randint(-2, 3, (n, 2), generator=generator)
    for i in range(n):
        images[i] = torch.roll(images[i], shifts=(shifts[i, 0].item(), shifts[i, 1].item()), dims=(1, 2))
    images = images + 0.3 * torch.randn(images.shape, generator=generator)
    images = (images - 0.1307) / 0.3081
    return images, labels


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(data), len(train_loader.dataset),
                100. * batch_idx / len(train_loader), loss.item()))


def test(model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction='sum').item()  # sum up batch loss
            pred = output.argmax(dim=1, keepdim=True)  # get the index of the max log-probability
            correct += pred.eq(target.view_as(pred)).sum().item()

    test_loss /= len(test_loader.dataset)
    print('Test set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)'.format(
        test_loss, correct, len(test_loader.dataset),
        100. * correct / len(test_loader.dataset)))
    return test_loss


def main():
    parser = argparse.ArgumentParser(description='MNIST-style CNN on synthetic digits')
    parser.add_argument('--batch-size', type=int, default=32, metavar='N')
    parser.add_argument('--test-batch-size', type=int, default=128, metavar='N')
    parser.add_argument('--train-size', type=int, default=256)
    parser.add_argument('--epochs', type=int, default=3, metavar='N')
    parser.add_argument('--lr', type=float, default=1.0, metavar='LR')
    parser.add_argument('--gamma', type=float, default=0.7, metavar='M')
    parser.add_argument('--seed', type=int, default=1, metavar='S')
    parser.add_argument('--log-interval', type=int, default=4, metavar='N')
    parser.add_argument('--device', default=None, help='default: the current accelerator, else cpu')
    parser.add_argument('--save-model', action='store_true')
    args = parser.parse_args()

    if args.device is not None:
        device = torch.device(args.device)
    elif torch.accelerator.is_available():
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")
    print(f"Using device: {device}")

    torch.manual_seed(args.seed)
    g = torch.Generator().manual_seed(args.seed)
    images, labels = synthetic_digits(args.train_size + 256, g)
    train_set = TensorDataset(images[:args.train_size], labels[:args.train_size])
    test_set = TensorDataset(images[args.train_size:], labels[args.train_size:])
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(test_set, batch_size=args.test_batch_size)

    model = Net().to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)

    first = test(model, device, test_loader)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        last = test(model, device, test_loader)
        scheduler.step()

    if args.save_model:
        torch.save(model.state_dict(), "mnist_cnn.pt")
    assert last < first, (first, last)
    print(f"loss fell: {first:.4f} -> {last:.4f}")


if __name__ == '__main__':
    main()
