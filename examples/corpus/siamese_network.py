"""A siamese network: one shared convolutional encoder applied to both images of a pair, the
two embeddings concatenated and classified same/different with a sigmoid and BCELoss, a Dataset
that draws positive and negative pairs, Adadelta with StepLR, as an ordinary PyTorch script.

The images are synthetic 28x28 pictures of ten classes (a blob at one of ten places, with noise).

    python siamese_network.py --device cpu --epochs 3
"""
import argparse
import random

import torch
import torch.nn as nn
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, Dataset


class SiameseNetwork(nn.Module):
    def __init__(self):
        super(SiameseNetwork, self).__init__()
        self.cnn = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=5, stride=2, padding=2),
            nn.BatchNorm2d(8),
            nn.ReLU(inplace=True),
            nn.Conv2d(8, 16, kernel_size=3, stride=2, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d((2, 2)),
        )
        self.fc_in_features = 16 * 2 * 2

        # add linear layers to compare between the features of the two images
        self.fc = nn.Sequential(
            nn.Linear(self.fc_in_features * 2, 32),
            nn.ReLU(inplace=True),
            nn.Linear(32, 1),
        )

        self.sigmoid = nn.Sigmoid()

        # initialize the weights
        self.cnn.apply(self.init_weights)
        self.fc.apply(self.init_weights)

    def init_weights(self, m):
        if isinstance(m, nn.Linear):
            torch.nn.init.xavier_uniform_(m.weight)
            m.bias.data.fill_(0.01)

    def forward_once(self, x):
        output = self.cnn(x)
        output = output.view(output.size()[0], -1)
        return output

    def forward(self, input1, input2):
        # get two images' features
        output1 = self.forward_once(input1)
        output2 = self.forward_once(input2)

        # concatenate both images' features
        output = torch.cat((output1, output2), 1)

        # pass the concatenation to the linear layers
        output = self.fc(output)

        # pass the out of the linear layers to sigmoid layer
        output = self.sigmoid(output)

        return output


class PairsDataset(Dataset):
    """Each item: two images and 1.0 if they show the same class, else 0.0 (half and half)."""

    def __init__(self, images, labels, seed):
        super(PairsDataset, self).__init__()
        self.images, self.labels = images, labels
        self.rng = random.Random(seed)
        self.by_class = {}
        for i, c in enumerate(labels.tolist()):
            self.by_class.setdefault(c, []).append(i)
        self.classes = sorted(self.by_class)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        image_1 = self.images[index]
        c = self.labels[index].item()
        if self.rng.random() < 0.5:
            index_2 = self.rng.choice(self.by_class[c])
            target = torch.tensor(1, dtype=torch.float)
        else:
            other = self.rng.choice([k for k in self.classes if k != c])
            index_2 = self.rng.choice(self.by_class[other])
            target = torch.tensor(0, dtype=torch.float)
        return image_1, self.images[index_2], target


def synthetic_digits(n, generator):
    """Ten classes: a bright blob at one of ten places on a ring, on a noisy background."""
    xs = torch.arange(28).float()
    angle = torch.arange(10).float() * (2 * 3.14159 / 10)
    cy, cx = 14 + 8 * torch.sin(angle), 14 + 8 * torch.cos(angle)
    d2 = (xs[None, :, None] - cy[:, None, None]) ** 2 + (xs[None, None, :] - cx[:, None, None]) ** 2
    templates = torch.exp(-d2 / 18).unsqueeze(1)
    labels = torch.randint(0, 10, (n,), generator=generator)
    images = templates[labels] + 0.3 * torch.randn(n, 1, 28, 28, generator=generator)
    return images, labels


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()

    # we aren't using `TripletLoss` as the MNIST dataset is simple, so `BCELoss` can do the trick.
    criterion = nn.BCELoss()

    for batch_idx, (images_1, images_2, targets) in enumerate(train_loader):
        images_1, images_2, targets = images_1.to(device), images_2.to(device), targets.to(device)
        optimizer.zero_grad()
        outputs = model(images_1, images_2).squeeze()
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(images_1), len(train_loader.dataset),
                100. * batch_idx / len(train_loader), loss.item()))


def test(model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0

    # we aren't using `TripletLoss` as the MNIST dataset is simple, so `BCELoss` can do the trick.
    criterion = nn.BCELoss(reduction='sum')

    with torch.no_grad():
        for (images_1, images_2, targets) in test_loader:
            images_1, images_2, targets = images_1.to(device), images_2.to(device), targets.to(device)
            outputs = model(images_1, images_2).squeeze()
            test_loss += criterion(outputs, targets).item()  # sum up batch loss
            pred = torch.where(outputs > 0.5, 1, 0)  # get the index of the max log-probability
            correct += pred.eq(targets.view_as(pred)).sum().item()

    test_loss /= len(test_loader.dataset)

    print('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'.format(
        test_loss, correct, len(test_loader.dataset),
        100. * correct / len(test_loader.dataset)))
    return test_loss


def main():
    # Training settings
    parser = argparse.ArgumentParser(description='Siamese network on synthetic digits')
    parser.add_argument('--batch-size', type=int, default=32, metavar='N')
    parser.add_argument('--train-size', type=int, default=256)
    parser.add_argument('--epochs', type=int, default=3, metavar='N')
    parser.add_argument('--lr', type=float, default=1.0, metavar='LR')
    parser.add_argument('--gamma', type=float, default=0.7, metavar='M')
    parser.add_argument('--seed', type=int, default=1, metavar='S')
    parser.add_argument('--log-interval', type=int, default=4, metavar='N')
    parser.add_argument('--device', default=None, help='default: the current accelerator, else cpu')
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    if args.device is not None:
        device = torch.device(args.device)
    elif torch.accelerator.is_available():
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    g = torch.Generator().manual_seed(args.seed)
    images, labels = synthetic_digits(args.train_size + 128, g)
    train_dataset = PairsDataset(images[:args.train_size], labels[:args.train_size], seed=args.seed)
    test_dataset = PairsDataset(images[args.train_size:], labels[args.train_size:], seed=args.seed + 1)
    train_loader = DataLoader(train_dataset, batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(test_dataset, batch_size=args.batch_size)

    model = SiameseNetwork().to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)

    first = test(model, device, test_loader)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        last = test(model, device, test_loader)
        scheduler.step()
    assert last < first, (first, last)
    print(f"loss fell: {first:.4f} -> {last:.4f}")


if __name__ == '__main__':
    main()
