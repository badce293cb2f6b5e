"""Graph neural networks for node classification on a sparse adjacency: a two-layer GCN (Kipf
and Welling: the symmetrically normalised adjacency with self-loops as a sparse COO tensor,
``torch.sparse.mm``) and a multi-head GAT (attention scores on the edges, a LeakyReLU, a softmax
over each node's neighbours, ELU), trained with Adam and weight decay on a few labelled nodes,
as an ordinary PyTorch script.

The graph is synthetic: a stochastic block model (nodes of one class link more often to each
other) whose node features are noisy class signatures.

    python gcn.py --device cpu --model gcn
    python gcn.py --device cpu --model gat
"""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class GraphConvolution(nn.Module):
    """Simple GCN layer, similar to https://arxiv.org/abs/1609.02907"""

    def __init__(self, in_features, out_features, bias=True):
        super(GraphConvolution, self).__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = nn.Parameter(torch.empty(in_features, out_features))
        if bias:
            self.bias = nn.Parameter(torch.empty(out_features))
        else:
            self.register_parameter('bias', None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1. / math.sqrt(self.weight.size(1))
        self.weight.data.uniform_(-stdv, stdv)
        if self.bias is not None:
            self.bias.data.uniform_(-stdv, stdv)

    def forward(self, input, adj):
        support = torch.mm(input, self.weight)
        output = torch.sparse.mm(adj, support)
        if self.bias is not None:
            return output + self.bias
        else:
            return output

    def __repr__(self):
        return self.__class__.__name__ + ' (' + str(self.in_features) + ' -> ' + str(self.out_features) + ')'


class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout):
        super(GCN, self).__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        x = self.gc2(x, adj)
        return F.log_softmax(x, dim=1)


class GraphAttentionLayer(nn.Module):
    """Multi-head graph attention (https://arxiv.org/abs/1710.10903) on an edge list."""

    def __init__(self, in_features, out_features, n_heads, concat=True, dropout=0.4, leaky_relu_slope=0.2):
        super(GraphAttentionLayer, self).__init__()
        self.n_heads = n_heads
        self.concat = concat
        self.dropout = dropout
        self.n_hidden = out_features // n_heads if concat else out_features
        self.W = nn.Parameter(torch.empty(size=(in_features, self.n_hidden * n_heads)))
        self.a = nn.Parameter(torch.empty(size=(n_heads, 2 * self.n_hidden, 1)))
        self.leakyrelu = nn.LeakyReLU(leaky_relu_slope)
        self.reset_parameters()

    def reset_parameters(self):
        nn.init.xavier_normal_(self.W)
        nn.init.xavier_normal_(self.a)

    def forward(self, h, adj):
        n_nodes = h.shape[0]
        h_transformed = torch.mm(h, self.W)
        h_transformed = F.dropout(h_transformed, self.dropout, training=self.training)
        h_transformed = h_transformed.view(n_nodes, self.n_heads, self.n_hidden).permute(1, 0, 2)

        # the attention logits of every edge (source, target) of the sparse adjacency
        edges = adj.coalesce().indices()
        src, dst = edges[0], edges[1]
        source_scores = torch.matmul(h_transformed, self.a[:, :self.n_hidden, :]).squeeze(-1)  # (heads, n)
        target_scores = torch.matmul(h_transformed, self.a[:, self.n_hidden:, :]).squeeze(-1)
        e = self.leakyrelu(source_scores[:, src] + target_scores[:, dst])  # (heads, n_edges)

        # a softmax over each node's neighbours: scatter the edge scores into a masked dense matrix
        scores = torch.full((self.n_heads, n_nodes, n_nodes), float('-inf'), device=h.device)
        scores[:, src, dst] = e
        attention = F.softmax(scores, dim=-1)
        attention = F.dropout(attention, self.dropout, training=self.training)

        h_prime = torch.matmul(attention, h_transformed)
        if self.concat:
            h_prime = h_prime.permute(1, 0, 2).contiguous().view(n_nodes, self.n_heads * self.n_hidden)
        else:
            h_prime = h_prime.mean(dim=0)
        return h_prime


class GAT(nn.Module):
    def __init__(self, in_features, n_hidden, n_heads, num_classes, dropout=0.4, leaky_relu_slope=0.2):
        super(GAT, self).__init__()
        self.gat1 = GraphAttentionLayer(in_features=in_features, out_features=n_hidden, n_heads=n_heads,
                                        concat=True, dropout=dropout, leaky_relu_slope=leaky_relu_slope)
        self.gat2 = GraphAttentionLayer(in_features=n_hidden, out_features=num_classes, n_heads=1,
                                        concat=False, dropout=dropout, leaky_relu_slope=leaky_relu_slope)

    def forward(self, input_tensor, adj_mat):
        x = self.gat1(input_tensor, adj_mat)
        x = F.elu(x)
        x = self.gat2(x, adj_mat)
        return F.log_softmax(x, dim=1)


def stochastic_block_model(n_nodes, n_classes, n_features, generator, p_in=0.1, p_out=0.01):
    labels = torch.randint(0, n_classes, (n_nodes,), generator=generator)
    same = labels[:, None] == labels[None, :]
    prob = torch.where(same, torch.tensor(p_in), torch.tensor(p_out))
    upper = torch.triu(torch.rand(n_nodes, n_nodes, generator=generator) < prob, diagonal=1)
    edges = (upper | upper.t()).nonzero().t()
    signatures = torch.randn(n_classes, n_features, generator=generator)
    features = signatures[labels] + 2.0 * torch.randn(n_nodes, n_features, generator=generator)
    return features, labels, edges


def normalized_adjacency(edges, n_nodes):
    """D^-1/2 (A + I) D^-1/2 as a sparse COO tensor."""
    loops = torch.arange(n_nodes).repeat(2, 1)
    indices = torch.cat([edges, loops], dim=1)
    values = torch.ones(indices.size(1))
    degree = torch.zeros(n_nodes).index_add_(0, indices[0], values)
    d_inv_sqrt = degree.pow(-0.5)
    values = d_inv_sqrt[indices[0]] * values * d_inv_sqrt[indices[1]]
    return torch.sparse_coo_tensor(indices, values, (n_nodes, n_nodes)).coalesce()


def accuracy(output, labels):
    preds = output.max(1)[1].type_as(labels)
    correct = preds.eq(labels).double()
    correct = correct.sum()
    return correct / len(labels)


def main():
    parser = argparse.ArgumentParser(description='GCN / GAT on a synthetic graph')
    parser.add_argument('--model', default='gcn', choices=['gcn', 'gat'])
    parser.add_argument('--nodes', type=int, default=200)
    parser.add_argument('--classes', type=int, default=4)
    parser.add_argument('--features', type=int, default=32)
    parser.add_argument('--epochs', type=int, default=30, help='Number of epochs to train.')
    parser.add_argument('--lr', type=float, default=0.01, help='Initial learning rate.')
    parser.add_argument('--weight_decay', type=float, default=5e-4, help='Weight decay (L2 loss on parameters).')
    parser.add_argument('--hidden', type=int, default=16, help='Number of hidden units.')
    parser.add_argument('--heads', type=int, default=4, help='Number of attention heads (GAT).')
    parser.add_argument('--dropout', type=float, default=0.5, help='Dropout rate (1 - keep probability).')
    parser.add_argument('--seed', type=int, default=42, help='Random seed.')
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
    features, labels, edges = stochastic_block_model(args.nodes, args.classes, args.features, g)
    adj = normalized_adjacency(edges, args.nodes)
    print(f"{args.nodes} nodes, {edges.size(1) // 2} edges, adjacency {adj.layout} with {adj._nnz()} entries")
    idx_train = torch.arange(0, args.nodes // 4)
    idx_val = torch.arange(args.nodes // 4, args.nodes // 2)
    idx_test = torch.arange(args.nodes // 2, args.nodes)

    if args.model == 'gcn':
        model = GCN(nfeat=features.shape[1], nhid=args.hidden, nclass=args.classes, dropout=args.dropout)
    else:
        model = GAT(in_features=features.shape[1], n_hidden=args.hidden, n_heads=args.heads,
                    num_classes=args.classes, dropout=args.dropout)
    optimizer = optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)

    model = model.to(device)
    features, adj, labels = features.to(device), adj.to(device), labels.to(device)
    idx_train, idx_val, idx_test = idx_train.to(device), idx_val.to(device), idx_test.to(device)

    def test():
        model.eval()
        output = model(features, adj)
        loss_test = F.nll_loss(output[idx_test], labels[idx_test])
        acc_test = accuracy(output[idx_test], labels[idx_test])
        print("Test set results:", "loss= {:.4f}".format(loss_test.item()),
              "accuracy= {:.4f}".format(acc_test.item()))
        return loss_test.item()

    first = test()
    for epoch in range(args.epochs):
        model.train()
        optimizer.zero_grad()
        output = model(features, adj)
        loss_train = F.nll_loss(output[idx_train], labels[idx_train])
        acc_train = accuracy(output[idx_train], labels[idx_train])
        loss_train.backward()
        optimizer.step()

        if epoch % 10 == 0:
            model.eval()
            output = model(features, adj)
            loss_val = F.nll_loss(output[idx_val], labels[idx_val])
            acc_val = accuracy(output[idx_val], labels[idx_val])
            print('Epoch: {:04d}'.format(epoch + 1), 'loss_train: {:.4f}'.format(loss_train.item()),
                  'acc_train: {:.4f}'.format(acc_train.item()), 'loss_val: {:.4f}'.format(loss_val.item()),
                  'acc_val: {:.4f}'.format(acc_val.item()))
    last = test()
    assert last < first, (first, last)
    print(f"loss fell: {first:.4f} -> {last:.4f}")


if __name__ == '__main__':
    main()
