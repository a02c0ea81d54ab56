"""Paddle: nn.Embedding(padding_idx=p) outputs zeros wherever the input is p, whatever row p holds
(torch's Embedding returns the stored row; only its gradient is zero). The row gets no gradient.
Confirms: embedding-padding-row[sgd|adam] (variant padding-row-looks-up-zeros)."""
import warnings; warnings.filterwarnings("ignore")
import numpy as np, paddle

print("paddle", paddle.__version__)
emb = paddle.nn.Embedding(5, 3, padding_idx=0)  # the default constructor otherwise (sparse=False)
emb.weight.set_value(np.ones((5, 3), np.float32))  # e.g. a pretrained table whose row 0 is not zero
y = emb(paddle.to_tensor(np.array([0, 1, 1], np.int64)))
print("weight row 0:", emb.weight.numpy()[0], " lookup of index 0:", y.numpy()[0])
y.sum().backward()
print("gradient of row 0:", emb.weight.grad.numpy()[0], " row 1:", emb.weight.grad.numpy()[1])
assert np.all(y.numpy()[0] == 0) and np.all(emb.weight.numpy()[0] == 1)
assert np.all(emb.weight.grad.numpy()[0] == 0) and np.all(emb.weight.grad.numpy()[1] == 2)
print("CONFIRMED: the padding index looks up zeros, not the stored row; the row gets no gradient")
