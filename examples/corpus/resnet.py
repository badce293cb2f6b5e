"""A torchvision-style ResNet (BasicBlock, BatchNorm, ReLU(inplace=True), residual ``out +=
identity``, 1x1 downsample shortcuts, Kaiming init, adaptive average pooling), trained with SGD,
momentum, weight decay and a cosine schedule on synthetic 3x16x16 images, as an ordinary
PyTorch script.

    python resnet.py --device cpu --steps 20
"""
import argparse
import time

import torch
import torch.nn as nn
from torch import Tensor


def conv3x3(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    """3x3 convolution with padding"""
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


def conv1x1(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    """1x1 convolution"""
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion: int = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        identity = x

        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)

        out = self.conv2(out)
        out = self.bn2(out)

        if self.downsample is not None:
            identity = self.downsample(x)

        out += identity
        out = self.relu(out)

        return out


class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=10, width=16, zero_init_residual=False):
        super().__init__()
        self.inplanes = width
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, width, layers[0])
        self.layer2 = self._make_layer(block, width * 2, layers[1], stride=2)
        self.layer3 = self._make_layer(block, width * 4, layers[2], stride=2)
        self.layer4 = self._make_layer(block, width * 8, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 8 * block.expansion, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, BasicBlock) and m.bn2.weight is not None:
                    nn.init.constant_(m.bn2.weight, 0)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                conv1x1(self.inplanes, planes * block.expansion, stride),
                nn.BatchNorm2d(planes * block.expansion),
            )

        layers = []
        layers.append(block(self.inplanes, planes, stride, downsample))
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes))

        return nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.relu(x)
        x = self.maxpool(x)

        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)

        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        x = self.fc(x)

        return x


def resnet10(**kwargs):
    return ResNet(BasicBlock, [1, 1, 1, 1], **kwargs)


def synthetic_batch(batch_size, num_classes, generator, size=16):
    """Each class is a colour and an orientation of stripes; the samples are noisy."""
    labels = torch.randint(0, num_classes, (batch_size,), generator=generator)
    xs = torch.linspace(-1, 1, size)
    yy, xx = torch.meshgrid(xs, xs, indexing="ij")
    angle = labels.float() * (3.14159 / num_classes)
    stripes = torch.sin(6 * (xx * torch.cos(angle)[:, None, None] + yy * torch.sin(angle)[:, None, None]))
    colour = torch.stack([torch.cos(angle), torch.sin(angle), torch.ones_like(angle) * 0.5], dim=1)
    images = stripes[:, None] * colour[:, :, None, None]
    images = images + 0.5 * torch.randn(images.shape, generator=generator)
    return images, labels


def main():
    parser = argparse.ArgumentParser(description="ResNet on synthetic images")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--wd", "--weight-decay", default=1e-4, type=float, dest="weight_decay")
    parser.add_argument("--num-classes", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None, help="default: the current accelerator, else cpu")
    args = parser.parse_args()

    if args.device is not None:
        device = torch.device(args.device)
    elif torch.accelerator.is_available():
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")
    torch.manual_seed(args.seed)
    g = torch.Generator().manual_seed(args.seed)

    model = resnet10(num_classes=args.num_classes, zero_init_residual=True).to(device)
    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=args.momentum,
                                weight_decay=args.weight_decay)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.steps)
    val_images, val_labels = synthetic_batch(128, args.num_classes, g)
    val_images, val_labels = val_images.to(device), val_labels.to(device)

    def evaluate():
        model.eval()
        with torch.no_grad():
            output = model(val_images)
            loss = criterion(output, val_labels).item()
            acc1 = (output.argmax(1) == val_labels).float().mean().item() * 100
        model.train()
        return loss, acc1

    first, acc = evaluate()
    print(f"before training: val loss {first:.4f}  acc@1 {acc:.1f}")
    end = time.time()
    for step in range(args.steps):
        images, target = synthetic_batch(args.batch_size, args.num_classes, g)
        images = images.to(device, non_blocking=True)
        target = target.to(device, non_blocking=True)
        output = model(images)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        if step % 4 == 0:
            print(f"step {step:3d}  loss {loss.item():.4f}  lr {scheduler.get_last_lr()[0]:.4f}  "
                  f"{time.time() - end:.2f}s")
    last, acc = evaluate()
    print(f"after training: val loss {last:.4f}  acc@1 {acc:.1f}")
    assert last < first, (first, last)
    print(f"loss fell: {first:.4f} -> {last:.4f}")


if __name__ == "__main__":
    main()
