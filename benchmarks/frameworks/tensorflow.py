"""TensorFlow with Keras layers, the training step in tf.function (common.TF_FUNCTION), as TF's
custom-loop guide writes it: GradientTape, then optimizer.apply_gradients"""
import warnings

from ..common import (AUDIT_BATCH, AUDIT_IMAGE, LR, N_LAYERS, TF_FUNCTION, THREADS, WEIGHT_DECAY, WIDTH, batch,
                      layer_weights)
from . import Case


class TensorFlowCase(Case):
    """with tf.GradientTape() as tape: loss = ...; grads = tape.gradient(loss, model.trainable_variables);
    optimizer.apply_gradients(zip(grads, model.trainable_variables))   (in tf.function; Keras 3, or
    Keras 2 with TF 2.15)"""

    framework = "tensorflow"
    modules = ("tensorflow", "keras")

    def __init__(self, mask, fraction, optimizer):
        super().__init__(mask, fraction, optimizer)
        import tensorflow as tf
        import keras
        self.tf = tf
        try:
            tf.config.threading.set_intra_op_parallelism_threads(THREADS)
            tf.config.threading.set_inter_op_parallelism_threads(THREADS)
        except RuntimeError:
            pass  # the runtime is already up in this process (a second case): set by then
        gpus = tf.config.list_physical_devices("GPU")
        if self.device == "cuda" and not gpus:
            raise NotImplementedError(f"CONFORMANCE_BENCH_DEVICE=cuda: tensorflow {tf.__version__} sees no GPU")
        self.tf_device = "/GPU:0" if self.device == "cuda" else "/CPU:0"
        # Keras drops (None, variable) pairs -- the unused and stop_gradient layers -- and warns
        # "Gradients do not exist for variables" each step; the dropping is the point here
        warnings.filterwarnings("ignore", message="Gradients do not exist")
        start, cut = self.start, self.cut

        class Stack(keras.Model):
            def __init__(self):
                super().__init__()
                self.blocks = [keras.layers.Dense(WIDTH, activation="tanh") for _ in range(N_LAYERS)]

            def call(self, y):
                for i in range(start, N_LAYERS):
                    y = self.blocks[i](y)
                    if i == cut:
                        y = tf.stop_gradient(y)
                return y

        with tf.device(self.tf_device):
            self.net = Stack()
            for layer, (kernel, bias) in zip(self.net.blocks, layer_weights()):
                layer.build((None, WIDTH))
                layer.set_weights([kernel, bias])  # keras keeps (in, out)
            if mask == "frozen":
                for layer in self.net.blocks[:self.k]:
                    layer.trainable = False
            self.variables = self.net.trainable_variables  # the Keras idiom: frozen ones left out
            if optimizer == "sgd_wd":  # Keras' weight_decay is decoupled in every optimizer
                self.opt = keras.optimizers.SGD(learning_rate=LR[optimizer], weight_decay=WEIGHT_DECAY)
            else:
                self.opt = keras.optimizers.AdamW(learning_rate=LR[optimizer], weight_decay=WEIGHT_DECAY)
            self.opt.build(self.variables)  # slot variables now, not inside the first trace
            masked = {id(v) for layer in self.net.blocks[:self.k] for v in layer.weights}
            self.masked = [i for i, v in enumerate(self.variables) if id(v) in masked]
            x, t = batch()
            self.x, self.t = tf.constant(x), tf.constant(t)
        # the custom loop as TF's guide writes it for speed: the step inside tf.function (traced
        # once here, in warm_up); CONFORMANCE_BENCH_TF_FUNCTION=0 runs it eagerly instead
        self.step_fn = tf.function(self._step) if TF_FUNCTION else self._step
        self.apply_fn = tf.function(self._apply) if TF_FUNCTION else self._apply
        self.warm_up()
        self.update_traced = False

    def ready_update(self):
        if not self.update_traced:  # trace apply_fn (~2 s for AdamW) only where it is timed
            self.optimizer_step()
            self.update_traced = True

    def sync(self):
        if self.device == "cuda":
            self.tf.test.experimental.sync_devices()

    def _step(self, x, t):
        tf = self.tf
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(self.net(x, training=True) - t))
        grads = tape.gradient(loss, self.variables)  # None where a variable got no gradient
        if self.zero:
            for i in self.masked:
                grads[i] = grads[i] * 0
        self.opt.apply_gradients(zip(grads, self.variables))
        return grads

    def _apply(self, grads):
        self.opt.apply_gradients(zip(grads, self.variables))

    def train_step(self):
        with self.tf.device(self.tf_device):
            self.grads = self.step_fn(self.x, self.t)
        self.sync()

    def optimizer_step(self):
        with self.tf.device(self.tf_device):
            self.apply_fn(self.grads)
        self.sync()

    @staticmethod
    def audit_target():
        """ResNet-18 in the Keras functional API (keras.applications has none): SGD with momentum and
        decoupled weight decay, the custom loop of TF's guide (GradientTape, apply_gradients), eager"""
        import numpy as np
        import tensorflow as tf
        import keras
        from keras import layers
        try:
            tf.config.threading.set_intra_op_parallelism_threads(THREADS)
            tf.config.threading.set_inter_op_parallelism_threads(THREADS)
        except RuntimeError:
            pass
        keras.utils.set_random_seed(0)

        def basic(x, filters, stride):
            y = layers.Conv2D(filters, 3, stride, padding="same", use_bias=False)(x)
            y = layers.ReLU()(layers.BatchNormalization()(y))
            y = layers.BatchNormalization()(layers.Conv2D(filters, 3, 1, padding="same", use_bias=False)(y))
            if stride != 1 or x.shape[-1] != filters:
                x = layers.BatchNormalization()(layers.Conv2D(filters, 1, stride, use_bias=False)(x))
            return layers.ReLU()(layers.Add()([x, y]))

        inputs = keras.Input((AUDIT_IMAGE, AUDIT_IMAGE, 3))
        x = layers.Conv2D(64, 7, 2, padding="same", use_bias=False)(inputs)
        x = layers.MaxPooling2D(3, 2, padding="same")(layers.ReLU()(layers.BatchNormalization()(x)))
        for filters, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            x = basic(basic(x, filters, stride), filters, 1)
        outputs = layers.Dense(1000)(layers.GlobalAveragePooling2D()(x))
        model = keras.Model(inputs, outputs)
        optimizer = keras.optimizers.SGD(learning_rate=0.1, momentum=0.9, weight_decay=1e-4)
        images = tf.constant(np.random.default_rng(0).standard_normal(
            (AUDIT_BATCH, AUDIT_IMAGE, AUDIT_IMAGE, 3), dtype=np.float32))
        labels = tf.constant(np.arange(AUDIT_BATCH) % 1000)
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

        def step():
            with tf.GradientTape() as tape:
                loss = loss_fn(labels, model(images, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))

        return {"model": model, "optimizer": optimizer, "step": step, "batch": (images, labels)}
