"""DCGAN (transposed-convolution generator, strided-convolution discriminator with
LeakyReLU(0.2, inplace=True), BatchNorm, BCELoss, Adam with beta1 = 0.5, the DCGAN weight
init) on synthetic 16x16 images of soft blobs, as an ordinary PyTorch script.

The check at the end: the generator learns the data -- a fixed, independent critic (the mean
and spread of the pixel values per image, against the real images') finds the generated images
closer to the real ones after training than before.

    python dcgan.py --device cpu --niter 2
"""
import argparse
import random

import torch
import torch.nn as nn
import torch.optim as optim
import torch.utils.data


# custom weights initialization called on netG and netD
def weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        torch.nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find('BatchNorm') != -1:
        torch.nn.init.normal_(m.weight, 1.0, 0.02)
        torch.nn.init.zeros_(m.bias)


class Generator(nn.Module):
    def __init__(self, nz, ngf, nc):
        super(Generator, self).__init__()
        self.main = nn.Sequential(
            # input is Z, going into a convolution
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            # state size. (ngf*4) x 4 x 4
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            # state size. (ngf*2) x 8 x 8
            nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False),
            nn.Tanh()
            # state size. (nc) x 16 x 16
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self, nc, ndf):
        super(Discriminator, self).__init__()
        self.main = nn.Sequential(
            # input is (nc) x 16 x 16
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf) x 8 x 8
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf*2) x 4 x 4
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid()
        )

    def forward(self, input):
        output = self.main(input)
        return output.view(-1, 1).squeeze(1)


def blobs(n, generator):
    """Images in [-1, 1]: a bright Gaussian blob at a random place on a dark background."""
    xs = torch.arange(16).float()
    centre = 4 + 8 * torch.rand(n, 2, generator=generator)
    d2 = (xs[None, :, None] - centre[:, 0, None, None]) ** 2 + (xs[None, None, :] - centre[:, 1, None, None]) ** 2
    return (2 * torch.exp(-d2 / 8) - 1).unsqueeze(1)


def stats(images):
    """Per image: the mean pixel and the pixel spread -- what an independent critic compares."""
    flat = images.flatten(1)
    return torch.stack([flat.mean(1), flat.std(1)], dim=1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--batchSize', type=int, default=32, help='input batch size')
    parser.add_argument('--nsamples', type=int, default=256, help='size of the synthetic data set')
    parser.add_argument('--nz', type=int, default=16, help='size of the latent z vector')
    parser.add_argument('--ngf', type=int, default=16)
    parser.add_argument('--ndf', type=int, default=16)
    parser.add_argument('--niter', type=int, default=3, help='number of epochs to train for')
    parser.add_argument('--lr', type=float, default=0.0002, help='learning rate, default=0.0002')
    parser.add_argument('--beta1', type=float, default=0.5, help='beta1 for adam. default=0.5')
    parser.add_argument('--manualSeed', type=int, default=1, help='manual seed')
    parser.add_argument('--device', default=None, help='default: the current accelerator, else cpu')
    opt = parser.parse_args()

    random.seed(opt.manualSeed)
    torch.manual_seed(opt.manualSeed)
    if opt.device is not None:
        device = torch.device(opt.device)
    elif torch.accelerator.is_available():
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")
    print(f"Using device: {device}")

    g = torch.Generator().manual_seed(opt.manualSeed)
    dataset = torch.utils.data.TensorDataset(blobs(opt.nsamples, g))
    dataloader = torch.utils.data.DataLoader(dataset, batch_size=opt.batchSize, shuffle=True, drop_last=True)

    nz, nc = opt.nz, 1
    netG = Generator(nz, opt.ngf, nc).to(device)
    netG.apply(weights_init)
    netD = Discriminator(nc, opt.ndf).to(device)
    netD.apply(weights_init)

    criterion = nn.BCELoss()

    fixed_noise = torch.randn(128, nz, 1, 1, device=device)
    real_label = 1
    fake_label = 0

    # setup optimizer
    optimizerD = optim.Adam(netD.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=opt.lr * 5, betas=(opt.beta1, 0.999))

    real_stats = stats(blobs(128, g).to(device))

    def distance():
        netG.eval()
        with torch.no_grad():
            fake = netG(fixed_noise)
        netG.train()
        return (stats(fake).mean(0) - real_stats.mean(0)).abs().sum().item()

    first = distance()
    for epoch in range(opt.niter):
        for i, (data,) in enumerate(dataloader, 0):
            ############################
            # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
            ###########################
            # train with real
            netD.zero_grad()
            real_cpu = data.to(device)
            batch_size = real_cpu.size(0)
            label = torch.full((batch_size,), real_label, dtype=real_cpu.dtype, device=device)

            output = netD(real_cpu)
            errD_real = criterion(output, label)
            errD_real.backward()
            D_x = output.mean().item()

            # train with fake
            noise = torch.randn(batch_size, nz, 1, 1, device=device)
            fake = netG(noise)
            label.fill_(fake_label)
            output = netD(fake.detach())
            errD_fake = criterion(output, label)
            errD_fake.backward()
            D_G_z1 = output.mean().item()
            errD = errD_real + errD_fake
            optimizerD.step()

            ############################
            # (2) Update G network: maximize log(D(G(z)))
            ###########################
            netG.zero_grad()
            label.fill_(real_label)  # fake labels are real for generator cost
            output = netD(fake)
            errG = criterion(output, label)
            errG.backward()
            D_G_z2 = output.mean().item()
            optimizerG.step()

            if i % 4 == 0:
                print('[%d/%d][%d/%d] Loss_D: %.4f Loss_G: %.4f D(x): %.4f D(G(z)): %.4f / %.4f'
                      % (epoch, opt.niter, i, len(dataloader),
                         errD.item(), errG.item(), D_x, D_G_z1, D_G_z2))

    last = distance()
    print(f"distance of the generated images' statistics from the real ones: {first:.4f} -> {last:.4f}")
    assert last < first, (first, last)
    print(f"loss fell: {first:.4f} -> {last:.4f}")


if __name__ == '__main__':
    main()
