"""Keras' own trainer for the tensorflow adapter (--api trainer): each step is one `fit` call on its batch

    model.compile(optimizer, loss="mse", run_eagerly=(mode == "eager"))
    model.fit(x, t, batch_size=len(x), epochs=1, shuffle=False, verbose=0)

(a case's cross-entropy: compile(loss=<the Keras loss object>), fit on the labels it takes; runner.py's _labels)

and the loss observed is the one fit reports for that batch (history "loss": the data loss plus
`model.losses`, the regularization penalties, as the loop's loss is). fit rather than
train_on_batch because fit is what Keras users train with; both run the same compiled train
function, so fit only adds its per-call epoch machinery. The layers a step runs vary, so each path
(and train/eval) is its own small keras.Model holding the whole net (its trainable_variables are the
net's, the list the loop hands its optimizer) and compiled with the one shared optimizer; Keras' fit
computes the gradient of every trainable variable, drops the unconnected (None) ones with a warning
and applies the rest. mode "graph" is fit's default compiled train function (a tf.function; no XLA:
Keras 3's jit_compile="auto" is off on a CPU-only machine, but on with a GPU, where the label
"tf.function" understates it), mode "eager" is compile(run_eagerly=True): no tf.function at all.
An eval-mode training step calls the layers with training=False inside that model, as the Keras
transfer-learning guide does under fit (a Dropout is then the identity, a BatchNormalization uses
its moving statistics); a forward-only eval step is `evaluate`. Images go in NHWC (runner.py's _inputs).
Data-parallel (--replicas 2): the model is made and compiled in the MirroredStrategy's scope and fit takes the
global batch, which it splits over the replicas, as Keras' distributed training guide writes it. Over several
nodes (--nodes) the strategy is a MultiWorkerMirroredStrategy, one worker per replica, each calling fit on the
global batch: Keras 2's fit trains on its replica's rows; Keras 3's fails there (keras-team/keras#20585).

KerasTrainer is a mixin of TensorFlowRunner (runner.py): it uses the runner's net, opt, tf_device,
mode and trainers_ cache.
"""
import warnings

# runner.py has imported tensorflow and keras quietly before it imports this module (the package
# imports runner.py first), so these imports load nothing and print nothing
import keras
import tensorflow as tf

from ...spec import replica_loss_weights
from ..base import Unsupported


class PathModel(keras.Model):
    """One path of the net as the keras.Model that compile/fit train. It holds the whole net, so its
    trainable_variables are the net's (what fit hands the optimizer), and runs the layers of `path`."""

    def __init__(self, net, path, train: bool):
        super().__init__()
        self.net = net
        self.layer_path = tuple(path)
        self.inference = not train

    def call(self, x, training=None):
        # fit calls the model with training=True; an eval-mode step calls the layers with
        # training=False, as the Keras transfer-learning guide keeps a base model in inference
        # mode while fit trains around it
        return self.net(x, path=list(self.layer_path), training=False if self.inference else training)


class KerasTrainer:
    """train_step (and the forward-only eval step) through compile + fit / evaluate."""

    @staticmethod
    def _check_trainer_params(optimizer):
        if optimizer.params != "default":
            raise Unsupported("Keras' fit hands the optimizer the model's trainable_variables; it takes "
                              "no other variable list")

    def _trainer(self, path, train, criterion=None):
        """The compiled keras.Model of one (path, train, loss); made on first use, sharing the layers and
        the optimizer with every other. `criterion`: the Keras loss object compile takes (else "mse")."""
        key = (tuple(path), train, id(criterion))
        if key not in self.trainers_:
            # a data-parallel run's model is made and compiled in the strategy's scope, as Keras' distributed
            # training guide writes it; fit then splits each batch over the replicas
            with tf.device(self.tf_device), self._scope():
                model = PathModel(self.net, path, train)
                model.compile(optimizer=self.opt, loss="mse" if criterion is None else criterion,
                              run_eagerly=self.mode == "eager")
            self.trainers_[key] = model
        return self.trainers_[key]

    def train_step(self, path, x, target, train, loss=None):
        # the engine refuses explicit clearing modes itself: fit takes tape.gradient's default
        with tf.device(self.tf_device):
            criterion, target = self._labels(loss, path, target)  # runner.py: the loss object, its labels
        model, x = self._trainer(path, train, criterion), self._inputs(path, x)  # images NHWC (runner.py)
        with tf.device(self.tf_device), self.refusal(), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Gradients do not exist")  # as in runner.py's _apply
            history = model.fit(x, target, batch_size=len(x), epochs=1, shuffle=False, verbose=0)
        return self._rank_part(float(history.history["loss"][0]), len(x), loss)

    def _evaluate(self, path, x, target, train, loss=None):
        if train:
            raise Unsupported("Keras' trainer runs the model in training mode only inside fit, which "
                              "also updates")
        with tf.device(self.tf_device):
            criterion, target = self._labels(loss, path, target)
        model, x = self._trainer(path, train, criterion), self._inputs(path, x)
        with tf.device(self.tf_device):
            return self._rank_part(float(model.evaluate(x, target, batch_size=len(x), verbose=0)), len(x), loss)

    def _rank_part(self, value, rows, loss):
        """Under MultiWorkerMirroredStrategy (one rank of several nodes') fit and evaluate report the global batch's
        loss on every worker, and the rank group adds up its ranks' losses, each weighed (replica_loss_weights):
        each worker reports its equal part."""
        if not isinstance(self.strategy, tf.distribute.MultiWorkerMirroredStrategy):
            return value
        world = self.strategy.num_replicas_in_sync
        return value / sum(replica_loss_weights([rows // world] * world, loss))
