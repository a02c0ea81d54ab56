"""The closed vocabulary of semantic variants: documented behaviour that differs from the reference.

Each variant is something the NumPy oracle (reference.py) can execute. A framework's known file
(runners/<framework>/known.yaml) lists the variants in force for a version range; a divergence is documented
only when the oracle, run with them, reproduces every checked observation of the framework.

For each name: what a framework with the variant does, and what the reference does instead. Both
sentences are shown in the report's profile table and porting notes, so they are written for a
porting engineer.
"""
from __future__ import annotations

from typing import NamedTuple


class Variant(NamedTuple):
    behaviour: str   # what a framework with this variant does
    reference: str   # what the reference semantics (and a framework without it) do instead


VARIANTS: dict[str, Variant] = {
    # ---- gradients
    "clear-default-zero-fills": Variant(
        "the default gradient-clearing call fills existing gradients with zeros, so a parameter left out "
        "of the next step keeps a zero gradient and is still decayed and moved by momentum / Adam state",
        "the default clearing sets gradients to None: a parameter left out of a step is not updated at all"),
    "functional-zero-filled-grads": Variant(
        "each backward returns one gradient per optimizer parameter and zeros where none flows (a layer "
        "left out of the step, never used, behind stop_gradient or frozen, statistics): the optimizer "
        "decays and moves all of them; parameters outside the optimizer get no gradient",
        "a parameter that no gradient reaches has none, and the optimizer skips it"),
    "nonscalar-backward-sums": Variant(
        "a backward pass (or gradient call) on a loss left per sample, a vector, differentiates its sum: no "
        "error, and every gradient is batch-size times the mean loss's",
        "backward on a non-scalar loss raises (a gradient is only implicit for a scalar): the step is refused"),
    "zeros-clear-fills-never-used": Variant(
        "clearing to zeros gives every optimizer parameter a zero gradient at the next backward, one "
        "that was never used included",
        "clearing to zeros zero-fills gradients that exist; a never-used parameter keeps None"),
    "compiled-first-call-sets-grads": Variant(
        "the first call of a compiled step path (the call that builds its program) sets the gradients of "
        "the parameters it reaches instead of adding to the ones they hold: gradients accumulated before "
        "it are lost; later calls of the same path accumulate",
        "every backward pass adds to the gradient a parameter already holds"),
    "frozen-still-trained": Variant(
        "marking a parameter not trainable only takes it out of the trainable collection (and so out of "
        "an optimizer built from it): handed to the gradient call and the optimizer explicitly, it gets "
        "its gradient and is updated and decayed",
        "a frozen parameter receives no gradient, so no optimizer moves it"),
    "default-collection-skips-frozen": Variant(
        "the model's default parameter collection leaves out the parameters frozen when it is taken: an "
        "optimizer built from it never holds them, so a parameter unfrozen later gets no update",
        "an optimizer built from the model's default collection holds its frozen parameters too: "
        "unfreezing one later trains it"),
    "padding-row-looks-up-zeros": Variant(
        "an Embedding with a padding index outputs zeros wherever the input is that index, whatever the "
        "padding row holds (a row loaded from a pretrained table, or moved by decay); the row gets no gradient",
        "looking up the padding index returns the padding row as it is stored (only its gradient is zero)"),
    # ---- parameter collections and modes
    "trainable-collection-read-each-step": Variant(
        "the training loop hands the optimizer the model's trainable collection as it is at each step: a "
        "parameter frozen between steps drops out of the update (no decay, no momentum), one unfrozen joins it",
        "an optimizer built from the model's default collection keeps the parameters it was built with"),
    "plain-containers-unregistered": Variant(
        "layers kept in a plain list, dict or tuple are not registered: the model's parameter collection "
        "misses them, so an optimizer built from it never updates them",
        "every layer the model holds is registered, whatever container holds it"),
    "plain-contained-layers-stay-train": Variant(
        "train()/eval() reach registered layers only: a layer in a plain container stays in train mode "
        "(its construction default), so its BatchNorm keeps normalising with batch statistics in eval",
        "train/eval mode reaches every layer the model holds"),
    "plain-contained-layers-stay-eval": Variant(
        "the train-mode switch reaches registered layers only and layers start in inference mode: a "
        "BatchNorm in a plain container never trains its statistics and always normalises with them",
        "train/eval mode reaches every layer the model holds"),
    "compiled-grad-keeps-first-mode": Variant(
        "a compiled gradient function (one graph per step path, compiled at its first call) keeps the "
        "train/eval mode the model had then: a later switch of the model's mode does not reach it, so its "
        "BatchNorm layers keep normalising and updating statistics as they did at that first call",
        "each backward runs every layer in the mode the model is in at that step"),
    "bn-stats-in-parameters": Variant(
        "BatchNorm running statistics are in the model's parameter collection, so an optimizer built "
        "from it holds them (they get no gradient, so it never steps them)",
        "BatchNorm running statistics are buffers, outside the parameter collection"),
    "bn-stats-differentiated": Variant(
        "BatchNorm running statistics handed to the optimizer are differentiated like parameters: in an eval "
        "step they get the loss's gradient through the normalisation (zero in a train step, where the batch's "
        "statistics are used), so the optimizer moves them by it, beside any decay",
        "running statistics get no gradient: an optimizer that holds them never steps them"),
    "bn-one-value-skipped": Variant(
        "a BatchNorm in train mode that gets one value per channel (a batch of one vector) passes its input "
        "through: no error, its statistics untouched, no gradient for its weight and bias; the rest of the "
        "step trains",
        "a BatchNorm in train mode with one value per channel raises (no batch statistics to normalise with), "
        "and a loop that skips the batch changes nothing"),
    "bn-one-value-normalised": Variant(
        "a BatchNorm in train mode that gets one value per channel normalises it anyway: the output is its bias, "
        "no gradient passes to its input or weight, and the running statistics take the batch's (variance 0, "
        "or 0/0 = NaN where the update divides by n - 1, which poisons every later eval step)",
        "a BatchNorm in train mode with one value per channel raises (no batch statistics to normalise with), "
        "and a loop that skips the batch changes nothing"),
    "bn-running-var-biased": Variant(
        "the running variance is updated with the biased (1/n) batch variance",
        "the running variance is updated with the unbiased (1/(n-1)) batch variance"),
    # ---- weight decay
    "decoupled-decay-all-optimizers": Variant(
        "an optimizer's weight_decay is decoupled (w -= lr * wd * w before the update) in every optimizer, "
        "SGD with momentum and Adam included",
        "weight_decay is L2 added to the gradient for SGD, momentum and Adam, and decoupled for AdamW only"),
    "regularizer-adds-to-decoupled-decay": Variant(
        "where the optimizer's decay is decoupled, a per-parameter regularizer is L2 added to the gradient "
        "on top of it: that parameter is decayed twice",
        "a per-parameter regularizer replaces the optimizer's decay for that parameter"),
    "no-decay-for-beta-gamma": Variant(
        "without parameter groups, the optimizer's weight_decay skips parameters named beta or gamma "
        "(BatchNorm's and LayerNorm's affine parameters)",
        "weight_decay applies to every parameter the optimizer holds"),
    # ---- what a weight-decay name filter is handed (the reference: torch's named_parameters(), `layer.weight`)
    "decay-filter-sees-gamma-beta": Variant(
        "a decay filter over the parameters' names sees a normalisation layer's weight and bias as "
        "`<layer>.gamma` and `<layer>.beta` (its statistics `moving_mean`, `moving_variance`) and an embedding's "
        "table as `<layer>.embedding_table`: a filter on 'bias' leaves LayerNorm's and BatchNorm's shift decayed, "
        "one on 'LayerNorm.weight' matches nothing",
        "a decay filter sees `<layer>.weight` and `<layer>.bias` for every layer kind (named_parameters())"),
    "decay-filter-sees-weight-names-only": Variant(
        "the exclusion list matches each part as a regular expression against the TF variable's name, which "
        "for a layer built on its own is the bare weight name (`kernel:0`, `bias:0`, `gamma:0`, `beta:0`, "
        "`embeddings:0`, `moving_mean:0`): a part naming a layer never matches, and 'bias' leaves "
        "normalisation shifts (beta) decayed",
        "a decay filter sees `<layer>.weight` and `<layer>.bias`, the layer's attribute name included"),
    "decay-filter-sees-scoped-weight-names": Variant(
        "the exclusion list matches each part as a regular expression against the TF variable's name, "
        "`<layer>/<weight>:0` for a layer built on its own, with Keras' weight names (kernel, bias, gamma, "
        "beta, embeddings, moving_mean, moving_variance): 'bias' leaves normalisation shifts (beta) decayed and "
        "'LayerNorm.weight' matches nothing",
        "a decay filter sees `<layer>.weight` and `<layer>.bias`"),
    "decay-filter-sees-flax-paths": Variant(
        "a decay mask sees each parameter by its path in the model, `<layer>/kernel` for Linear and Conv "
        "weights, `<layer>/scale` for a normalisation weight, `<layer>/embedding` for an embedding table: a "
        "filter on 'weight' or 'LayerNorm.weight' matches nothing",
        "a decay filter sees `<layer>.weight` and `<layer>.bias` (named_parameters())"),
    "decay-fun-sees-generated-names": Variant(
        "AdamW's apply_decay_param_fun is handed each parameter's generated name, `<layer class in snake "
        "case>_<n>.w_0` (b_0 for a bias), never its attribute path: a filter on 'bias' or on a layer's name "
        "matches nothing, one on 'norm' matches every LayerNorm and BatchNorm parameter",
        "a decay filter sees the attribute path `<layer>.weight`, `<layer>.bias`"),
    "momentum-velocity-scaled-by-lr": Variant(
        "SGD with momentum keeps a velocity already scaled by the learning rate (v = momentum * v - lr * g; "
        "w += v): a learning-rate change applies to gradients from then on, the velocity keeps the old rate's steps",
        "the momentum buffer accumulates raw gradients (buf = momentum * buf + g; w -= lr * buf): a new "
        "learning rate scales the whole buffer at once"),
    # ---- Adam numerics
    "adam-epsilon-hat": Variant(
        "Adam adds epsilon to sqrt(v) before the bias correction ('epsilon hat'): the effective epsilon is "
        "eps * sqrt(1 - beta2^t)",
        "Adam adds epsilon to sqrt(v_hat), after the bias correction"),
    "adamw-no-bias-correction": Variant(
        "AdamW has no bias correction: w -= lr * (m / (sqrt(v) + eps) + wd * w)",
        "AdamW corrects the moments' bias by 1 - beta^t"),
    "adam-squares-each-lookup": Variant(
        "Adam and AdamW handed an embedding's sparse gradient square each lookup's slice before summing a "
        "row's duplicates: a row looked up k times in a batch adds the sum of the k squares to its second "
        "moment, not the square of its summed gradient",
        "Adam's second moment adds the square of each parameter's (dense, summed) gradient"),
    "adam-shared-step-counter": Variant(
        "Adam's bias correction counts the optimizer's steps, not the parameter's: a parameter that "
        "skipped a step resumes with a larger t",
        "each parameter's bias correction counts the steps that updated it"),
    "padding-row-gets-gradient": Variant(
        "an Embedding's padding_idx only zeroes that row when the layer is built: the row still gets its "
        "gradient like any row looked up, so values loaded into it move",
        "the padding row gets no gradient: without decay it never moves"),
    # ---- freezing
    "frozen-bn-runs-inference": Variant(
        "a BatchNorm layer frozen with the layer-level switch runs in inference mode, in train steps too: "
        "its running statistics stay put, it normalises with them, and the gradient upstream is the "
        "inference one",
        "freezing a BatchNorm stops its parameters' gradients only: in a train step it still normalises "
        "with the batch and updates its running statistics"),
    "clear-skips-frozen": Variant(
        "clearing gradients skips frozen parameters: one frozen after a backward keeps its last gradient",
        "clearing gradients clears every parameter's gradient, frozen or not"),
    "step-skips-frozen": Variant(
        "the optimizer step skips frozen parameters, even one that holds a gradient",
        "the optimizer step updates every parameter it holds that has a gradient, frozen or not"),
    "compiled-keeps-first-frozen": Variant(
        "a compiled step keeps the frozen parameters of its first call: one unfrozen later still gets no "
        "gradient from that step's program, and does not train",
        "a compiled step follows the parameters' current trainable flags"),
    "frozen-layernorm-grad-ignores-weight": Variant(
        "a LayerNorm whose weight is frozen passes its input the gradient computed as if the weight were 1",
        "a LayerNorm passes its input the gradient through its weight, frozen or not"),
    # ---- constructor defaults (settings a case leaves to the framework; the reference's are torch's)
    "bn-default-momentum-0.99": Variant(
        "a BatchNorm built without momentum keeps 0.99 of its running statistics per batch (the new "
        "batch weighs 0.01)",
        "a default BatchNorm weighs the new batch 0.1 (torch momentum=0.1, 0.9 in the old-statistic convention)"),
    "norm-default-eps-1e-3": Variant(
        "BatchNorm and LayerNorm built without epsilon add 1e-3 to the variance",
        "the default epsilon of BatchNorm and LayerNorm is 1e-5"),
    "layernorm-default-eps-1e-7": Variant(
        "a LayerNorm built without epsilon adds 1e-7 to the variance",
        "the default epsilon of LayerNorm is 1e-5"),
    "layernorm-default-eps-1e-6": Variant(
        "a LayerNorm built without epsilon adds 1e-6 to the variance",
        "the default epsilon of LayerNorm is 1e-5"),
    "sgd-default-lr-0.01": Variant(
        "SGD (with or without momentum) built without a learning rate uses 0.01",
        "the default learning rate of SGD is 1e-3"),
    "adam-default-eps-1e-7": Variant(
        "Adam and AdamW built without epsilon use 1e-7",
        "the default epsilon of Adam and AdamW is 1e-8"),
    "adamw-default-eps-1e-6": Variant(
        "AdamW built without epsilon uses 1e-6",
        "the default epsilon of Adam and AdamW is 1e-8"),
    "sgd-default-lr-0.1": Variant(
        "SGD built without a learning rate steps with 0.1",
        "the default learning rate of every optimizer is 1e-3"),
    "adamw-default-decay-0": Variant(
        "AdamW built without weight_decay does not decay",
        "AdamW's default weight_decay is 0.01"),
    "adamw-default-decay-0.004": Variant(
        "AdamW built without weight_decay decays by 0.004 (lr-scaled, as its explicit decay)",
        "AdamW's default weight_decay is 0.01"),
    "adamw-default-decay-0.0001": Variant(
        "AdamW built without weight_decay decays by 1e-4 (lr-scaled, as its explicit decay)",
        "AdamW's default weight_decay is 0.01"),
    # ---- default initialization (a layer built without initializers; the reference is torch's constructors)
    "bias-init-zero": Variant(
        "Linear and Conv biases start at zero",
        "a Linear or Conv bias starts from U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as its weight's bound"),
    "linear-init-xavier-uniform": Variant(
        "a Linear weight starts from U(-b, b) with b = sqrt(6 / (fan_in + fan_out)) (Glorot / Xavier uniform): "
        "for a layer much wider than it is deep, about twice the reference's scale",
        "a Linear weight starts from kaiming_uniform(a=sqrt(5)), U(-1/sqrt(fan_in), 1/sqrt(fan_in))"),
    "conv-init-xavier-uniform": Variant(
        "a Conv weight starts from U(-b, b) with b = sqrt(6 / (fan_in + fan_out)), fans counting the kernel's "
        "receptive field (Glorot / Xavier uniform)",
        "a Conv weight starts from kaiming_uniform(a=sqrt(5)), U(-1/sqrt(fan_in), 1/sqrt(fan_in))"),
    "conv-init-he-normal": Variant(
        "a Conv weight starts from N(0, sqrt(2 / fan_in)), fan_in = in channels x kernel area (He / Kaiming "
        "normal): about 2.4 times the reference's scale",
        "a Conv weight starts from kaiming_uniform(a=sqrt(5)), U(-1/sqrt(fan_in), 1/sqrt(fan_in))"),
    "linear-conv-init-lecun-normal": Variant(
        "Linear and Conv weights start from a truncated normal with standard deviation 1/sqrt(fan_in) (LeCun "
        "normal): about 1.7 times the reference's scale",
        "Linear and Conv weights start from kaiming_uniform(a=sqrt(5)), standard deviation 1/sqrt(3 fan_in)"),
    "embedding-init-xavier-uniform": Variant(
        "an Embedding table starts from U(-b, b) with b = sqrt(6 / (rows + dim)) (Xavier uniform): tiny next "
        "to the reference's unit scale",
        "an Embedding table starts from N(0, 1)"),
    "embedding-init-uniform-0.05": Variant(
        "an Embedding table starts from U(-0.05, 0.05)",
        "an Embedding table starts from N(0, 1)"),
    "embedding-init-normal-0.01": Variant(
        "an Embedding table starts from N(0, 0.01)",
        "an Embedding table starts from N(0, 1)"),
    "embedding-init-normal-fan-in": Variant(
        "an Embedding table starts from N(0, 1/sqrt(dim))",
        "an Embedding table starts from N(0, 1)"),
    "conv-default-no-bias": Variant(
        "a Conv2d built without saying whether it has a bias has none: ported code that leaves the argument out "
        "loses the bias (a checkpoint's bias has nowhere to go)",
        "a Conv2d has a bias unless it is built with bias=False"),
    "conv-default-pads-same": Variant(
        "a Conv2d built without a padding pads 'same' (kernel // 2 per side at stride 1): the image keeps its size, "
        "where ported code expects it to shrink by the kernel less one, so the layers after it see other shapes",
        "a Conv2d built without a padding pads nothing (padding=0, 'valid'): the image shrinks by the kernel less one"),
    "dropout-positional-is-keep-prob": Variant(
        "Dropout's first positional argument is the probability to keep: Dropout(0.1), ported as written, "
        "zeroes 90 % of the activations",
        "Dropout's first positional argument is the probability to zero: Dropout(0.1) zeroes 10 %"),
    "ce-default-takes-probabilities": Variant(
        "a cross-entropy loss built without from_logits reads the scores as probabilities: it clips them to "
        "[1e-7, 1 - 1e-7] and renormalises them instead of applying a softmax, so a model ending in logits "
        "(as a ported torch model does) trains on a different loss, and on none where its scores are negative",
        "a cross-entropy loss takes logits and applies the softmax itself"),
    "ce-default-ignores-no-label": Variant(
        "a cross-entropy built without an ignore index ignores no label: data labelled -100 for torch (padding, "
        "masked tokens) is an out-of-range class, and the step raises",
        "a cross-entropy built without an ignore index skips the samples labelled -100"),
    "compiled-step-decays-before-raising": Variant(
        "a compiled training step whose loss raises (a label out of range) has already applied the optimizer's "
        "decoupled weight decay: every parameter shrinks by lr * wd, though the step failed and nothing else moved",
        "a step that raises changes nothing"),
    "ce-negative-ignore-mean-over-batch": Variant(
        "a cross-entropy's mean over a batch with samples labelled with a negative ignore index (-100 by default, "
        "or -1) divides by the whole batch size: the ignored samples count in the mean, so each gradient shrinks "
        "by the share of ignored samples",
        "a cross-entropy's mean divides by the number of samples not ignored"),
    "ce-smoothing-drops-ignore-index": Variant(
        "with label smoothing the ignore index is not applied: an ignored sample's smoothed label (a uniform "
        "share, plus the label's mass) trains like any other; a negative ignored label raises",
        "with label smoothing an ignored sample still adds nothing to the loss"),
    "ce-smoothing-mean-over-classes": Variant(
        "with label smoothing and a non-negative ignore index, a cross-entropy's mean divides by batch size times "
        "the number of classes: the loss and every gradient are that many times smaller",
        "a cross-entropy's mean divides by the number of samples not ignored"),
    "ce-all-ignored-mean-zero": Variant(
        "a cross-entropy's mean over a batch whose samples are all ignored is 0",
        "a cross-entropy's mean over a batch whose samples are all ignored is 0/0, NaN (the gradient is zero)"),
    "ce-all-ignored-nan-grad": Variant(
        "a cross-entropy's mean over a batch whose samples are all ignored is NaN and so is its gradient: one "
        "update makes every parameter upstream NaN for good",
        "a cross-entropy's mean over a batch whose samples are all ignored is 0/0, NaN, and its gradient zero"),
    "replica-grads-summed": Variant(
        "data-parallel replicas' gradients are summed: each update is the replica count times the single-device "
        "one on the global batch (each replica normalises with its own rows' BatchNorm statistics)",
        "data-parallel training equals one device on the global batch with the mean loss"),
    "replica-grads-averaged": Variant(
        "data-parallel replicas' gradients are averaged over the replicas, each the gradient of its own rows' mean: "
        "with unequal shares the samples of a smaller share weigh more (each replica normalises with its own rows' "
        "BatchNorm statistics)",
        "data-parallel training equals one device on the global batch with the mean loss: every sample weighs the same"),
    "replica-stats-own-rows": Variant(
        "each data-parallel replica normalises its rows with their own BatchNorm statistics and updates its own "
        "running statistics (a read gives replica 0's), while the replicas' gradients combine as one device's on "
        "the global batch would",
        "BatchNorm normalises the global batch with its statistics, as on one device"),
    "replica-clip-before-combining": Variant(
        "gradient clipping (global norm or per variable) applies to each data-parallel replica's share of the "
        "combined gradient (its own gradient as the combination weighs it), before the shares are added: a global "
        "norm is never measured on the combined gradient",
        "clipping applies to the combined gradient, as on one device"),
    "replica-stats-read-averaged": Variant(
        "each data-parallel replica keeps its own BatchNorm running statistics, and reading them gives their mean "
        "over the replicas (a sync-on-read variable)",
        "running statistics are those of one device on the global batch"),
    "unused-params-refused": Variant(
        "a data-parallel step after one in which a trainable parameter got no gradient raises, unless the engine "
        "was told that parameters may go unused (find_unused_parameters=True); every later step raises too",
        "a parameter that gets no gradient on a data-parallel step is left alone, as on one device"),
    "momentum-default-0.9": Variant(
        "a momentum optimizer built without momentum uses 0.9",
        "a momentum optimizer built without momentum uses 0 (torch SGD's default: plain SGD)"),
}
