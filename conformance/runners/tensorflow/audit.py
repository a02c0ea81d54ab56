"""The TensorFlow/Keras probe of `python -m conformance audit`: a user's keras.Model, Keras optimizer
and step (Keras 3 on TF >= 2.16, Keras 2 on TF 2.15).

What the model holds: its weights (`model.weights`; trainable: in `model.trainable_weights`, so a
frozen layer's weights and BatchNormalization's moving_mean / moving_variance, statistics, are not)
and its layer tree (`_flatten_layers`, the tree Keras tracks). A layer's path is the attribute path
that holds it (`blocks[0].conv1`; a layer Keras holds in its own list, as a Sequential's, is
`layers[i]` there); a weight is named `<layer path>.<its name in the layer>` (`input_norm.gamma`),
the same in Keras 2 and 3 and unique in the model. Keras' own variable names are not: Keras 3's
`variable.path` holds layer names, not attributes, and Keras 2's `variable.name` of a layer built
outside the model's call has no scope at all (`kernel:0`).

Keras tracks layers and weights assigned as attributes and in lists, dicts and tuples (and sets, in
Keras 3) itself; what it misses is looked for in every layer's attributes (auditor/walk.py), Keras'
own bookkeeping skipped: a layer in a frozenset (or a set, in Keras 2), one set with
object.__setattr__, a raw tf.Variable attribute (Keras 3). Such a layer is reported only when it
holds a weight the model's weights miss: a layer without weights loses nothing (Keras passes
`training` to every layer called inside `call`, tracked or not), and a Keras structure that only
views tracked layers (Sequential's inner Functional) is none. A layer held by a plain object (not a
container) is not looked for (walk.py enters containers only).
Layers have no train/eval mode (has_modes False): `training` is an argument of each call.
Weights created after the inventory (a layer built lazily by its first call during the audit) are
not observed: build the model (call it once per branch) before handing it over.

What the optimizer holds: a Keras optimizer holds no list until its first update builds it with the
variables that update receives. Built, in_optimizer is that list (Keras 3 `_trainable_variables_indices`,
Keras 2 `_index_dict`); not yet built, it is the model's trainable weights, which is what the usual
custom loop (`apply_gradients(zip(grads, model.trainable_variables))`) and fit hand it. A step that
hands an unbuilt optimizer another list is then seen only at the update: the variables it leaves out
read as "none" there. Weight decay (`decayed`) is Keras' own test, `optimizer._use_weight_decay`,
asked with what `_apply_weight_decay` asks it with (Keras 3 on TF: the backing tf.Variable, whose name
is matched by `exclude_from_weight_decay(var_names=...)`), its cache left as it was.

Gradients are read where the update receives them: install() puts a wrapper on the optimizer
instance's `apply` (Keras 3, which `apply_gradients` calls) or `apply_gradients` (Keras 2), which
records each (gradient, variable) pair and calls the original with the same arguments. A held
variable whose gradient is None, or which the call does not receive at all, reads "none".
Eagerly (a custom loop, fit(run_eagerly=True)) the wrapper reads each gradient's values.
Inside a tf.function (fit / train_on_batch, a user's @tf.function step) the wrapper runs once, while
tracing; what it adds to the traced graph only counts, in tf.Variables of the probe's own read after
each step, the updates and, per variable, the updates that received a gradient. Which gradients are
None is fixed at tracing, so "none" is read exactly; a gradient that is there reads "unread": reading
its values would make it an input of the probe's ops, and TF's graph optimizer (grappler) then
compiles the update otherwise (its MinimizeBroadcasts stage reorders the products that make the
gradient and the update's `gradient * learning_rate` only while the gradient has no other consumer),
which changes the update's last bit (`graph_values = True` reads them anyway). The updates of one
traced step are read merged: the first carries what they received, the others are counted.

A graph traced before install() never calls the wrapper: fit's and train_on_batch's train function
when the model was fitted before it was handed over, or a user's tf.function already called. It is
not traced again, since a new trace changes the step: random ops get new seeds at tracing (Keras 2's
Dropout masks, any tf.random op of the user's). The optimizer counts its updates in `iterations`
(in a graph too): when that count grows by more than the updates the wrapper saw, take_updates()
raises AuditInputError saying so, after the step has run as it would (hand over a model not fitted
yet and a step function not called yet). uninstall() puts back the train function the model had (a
fresh model's None: fit traces again after the audit, as on a first call); a user's tf.function
traced during the audit keeps the probe's counting ops, which write only the probe's variables.
"""
from __future__ import annotations

import numpy as np

from ...auditor.observe import AuditInputError, DecaySetting, Inventory, Layer, Param, Probe, grad_state
from ...auditor.walk import plain_contents
from .runner import KERAS2, keras, tf  # imports TF quietly

# Keras' own structures in a layer's attributes: what it tracks (walked as such, not as plain
# containers), graph bookkeeping of Functional / Sequential models, and TF's trackable records
KERAS_STRUCTURES = frozenset({
    "_layers", "_tracker", "_tracked", "_trainable_variables", "_non_trainable_variables", "_trainable_weights",
    "_non_trainable_weights", "_seed_generators", "_metrics", "_self_tracked_trackables", "_functional",
    "_operations", "_operations_by_depth", "_nodes", "_nodes_by_depth", "_inputs", "_outputs",
    "_inputs_struct", "_outputs_struct", "_input_layers", "_output_layers", "_network_nodes", "_created_nodes",
    "_layer_call_argspecs", "_output_mask_cache", "_output_tensor_cache", "_output_shape_cache", "_feed_inputs",
    "_nested_inputs", "_nested_outputs", "_inbound_nodes", "_outbound_nodes", "_inbound_nodes_value",
    "_outbound_nodes_value", "_input_coordinates", "_output_coordinates", "_tensor_usage_count"})
_BARE: set = set()


def _keras_attributes() -> set:
    """The attribute names a bare keras.layers.Layer and keras.Model set for themselves (named, so
    that making them takes no name from the user's auto-naming)."""
    if not _BARE:
        _BARE.update(vars(keras.layers.Layer(name="conformance_audit_bare_layer")))
        _BARE.update(vars(keras.Model(name="conformance_audit_bare_model")))
    return _BARE


def _type(obj) -> str:
    return type(obj).__name__


def _qualified(obj) -> str:
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


VARIABLE_TYPES = (tf.Variable,) if KERAS2 else (tf.Variable, keras.Variable)


def _optimizer_types() -> tuple:
    if KERAS2:  # the Keras 2 optimizers, and the legacy ones it still ships
        return keras.optimizers.Optimizer, keras.optimizers.legacy.Optimizer
    return (keras.optimizers.Optimizer,)


def _short(variable) -> str:
    """The variable's own name in its layer: Keras 3 `name`, Keras 2 `name`'s last part without ':0'."""
    return variable.name.rsplit("/", 1)[-1].split(":")[0] if KERAS2 else variable.name


def _join(path: str, where: str) -> str:
    return f"{path}.{where}" if path else where


class KerasProbe(Probe):
    framework = "tensorflow"
    # True: in a traced step, also read each gradient's values into the probe's variables. Off by
    # default: those reads are consumers of the gradient, and grappler then compiles the update
    # otherwise (module docstring), which can change the update's last bit.
    graph_values = False

    def __init__(self, model, optimizer):
        if not isinstance(model, keras.layers.Layer):
            raise AuditInputError(f"model is a {_qualified(model)}, not a keras.Model (or keras.layers.Layer) "
                                  f"of Keras {keras.__version__}")
        if not isinstance(optimizer, _optimizer_types()):
            raise AuditInputError(f"optimizer is a {_qualified(optimizer)}, not a keras.optimizers.Optimizer "
                                  f"of Keras {keras.__version__}")
        super().__init__(model, optimizer)
        try:
            weights = list(model.weights)
        except ValueError as exc:  # Keras 2: a subclassed model not built yet
            raise AuditInputError(f"model {model.name} has no weights yet: call it once on a batch before "
                                  f"handing it over ({' '.join(str(exc).split())[:200]})") from None
        if not weights:
            raise AuditInputError(f"model {model.name} has no weights yet: call it once on a batch (each "
                                  "branch) before handing it over")
        self._updates: list[dict] = []
        self._installed: dict = {}
        self._layers = self._find_layers()                  # path -> (layer, registered)
        self._variables = self._find_variables(weights)      # name -> (variable, Param)
        self._by_key = {}                                    # id of a variable (and its tf.Variable) -> name
        for name, (variable, _) in self._variables.items():
            self._by_key.setdefault(id(variable), name)
            if not KERAS2 and isinstance(variable, keras.Variable):
                self._by_key.setdefault(id(variable.value), name)

    # ---------------------------------------------------------------- what the model holds
    def _contents(self, layer, types):
        skip = _keras_attributes() | KERAS_STRUCTURES
        attributes = {k: v for k, v in vars(layer).items() if k not in skip and not k.startswith("_self_")}
        return plain_contents(attributes, types)

    def _find_layers(self) -> dict:
        tracked = self.model._flatten_layers(include_self=True, recursive=True)
        registered = {id(layer) for layer in tracked}
        weights = {id(w) for w in self.model.weights}
        layers, seen, queue = {"": (self.model, True)}, {id(self.model)}, [("", self.model)]
        while queue:
            path, layer = queue.pop(0)
            found = [(where, obj) for where, obj in self._contents(layer, (keras.layers.Layer,))
                     if not isinstance(obj, keras.metrics.Metric)]  # Keras 2 metrics are layers
            # a layer is named by a public attribute that holds it, else by its place in the list Keras
            # holds it in (a Sequential's `layers[i]`), else by a private attribute
            children = [i for i in found if not i[0].startswith("_")]
            listed = list(getattr(layer, "layers", []) or []) if isinstance(layer, keras.Model) else []
            for child in layer._flatten_layers(include_self=False, recursive=False):  # held by Keras itself
                index = next((n for n, item in enumerate(listed) if item is child), None)
                children.append((f"layers[{index}]" if index is not None else child.name, child))
            children += [i for i in found if i[0].startswith("_")]
            for where, child in children:
                if id(child) in seen:
                    continue
                seen.add(id(child))
                is_registered = id(child) in registered
                if not is_registered and all(id(w) in weights for w in self._weights_of(child)):
                    continue  # misses nothing: no weight of its own, or a view of tracked layers
                layers[_join(path, where)] = (child, is_registered)
                queue.append((_join(path, where), child))
        for layer in tracked:  # reached by no path above (not expected): named by the layer's name
            if id(layer) not in seen:
                seen.add(id(layer))
                layers[layer.name] = (layer, True)
        return layers

    @staticmethod
    def _weights_of(layer) -> list:
        try:
            return list(layer.weights)
        except ValueError:  # Keras 2: a subclassed model not built
            return []

    @staticmethod
    def _own(layer) -> list:
        """The weights the layer created itself (not its sublayers')."""
        lists = ("_trainable_weights", "_non_trainable_weights") if KERAS2 else \
            ("_trainable_variables", "_non_trainable_variables")
        return [v for attribute in lists for v in (getattr(layer, attribute, None) or [])]

    def _find_variables(self, weights) -> dict:
        owner = {}
        for path, (layer, _) in self._layers.items():
            for variable in self._own(layer):
                owner.setdefault(id(variable), path)
        trainable = {id(v) for v in self.model.trainable_weights}
        held, decayed = self._optimizer_view()
        variables, seen = {}, set()

        def add(name, variable, layer_path, registered, is_trainable):
            if id(variable) in seen:
                return
            seen.add(id(variable))
            layer = self._layers.get(layer_path, (self.model, True))[0]
            statistic = isinstance(layer, keras.layers.BatchNormalization) and any(
                variable is getattr(layer, role, None) for role in ("moving_mean", "moving_variance"))
            unique, n = name, 2
            while unique in variables:
                unique, n = f"{name}#{n}", n + 1
            in_optimizer = held(variable, is_trainable and registered and not statistic)
            variables[unique] = (variable, Param(
                name=unique, layer=layer_path, layer_type=_type(layer), size=int(np.prod(variable.shape)),
                trainable=is_trainable and not statistic, statistic=statistic, registered=registered,
                in_optimizer=in_optimizer, decayed=decayed(variable) if in_optimizer else None))

        for variable in weights:  # registered ones first
            path = owner.get(id(variable), "")
            add(_join(path, _short(variable)), variable, path, True, id(variable) in trainable)
        for path, (layer, registered) in self._layers.items():
            if not registered:
                layer_trainable = {id(v) for v in layer.trainable_weights} if self._weights_of(layer) else set()
                for variable in self._weights_of(layer):
                    where = owner.get(id(variable), path)
                    add(_join(where, _short(variable)), variable, where, False, id(variable) in layer_trainable)
            for where, found in self._contents(layer, VARIABLE_TYPES):  # a weight in a plain container
                if id(found) not in seen and id(found) not in owner:
                    add(_join(path, where), found, path, False, bool(getattr(found, "trainable", False)))
        return variables

    # ---------------------------------------------------------------- what the optimizer holds
    def _optimizer_view(self):
        """(held(variable, default) -> bool, decayed(variable) -> bool)."""
        opt = self.optimizer
        if KERAS2 and not isinstance(opt, keras.optimizers.Optimizer):  # legacy: no fixed list, no decay
            return (lambda variable, default: default), (lambda variable: False)
        built = getattr(opt, "_built", False) if KERAS2 else bool(getattr(opt, "built", False))
        index = getattr(opt, "_index_dict", {}) if KERAS2 else getattr(opt, "_trainable_variables_indices", {})

        def held(variable, default):
            return opt._var_key(variable) in index if built else default

        def decayed(variable):
            if not getattr(opt, "weight_decay", None):
                return False
            return self._use_weight_decay(variable)
        return held, decayed

    def _use_weight_decay(self, variable) -> bool:
        """Keras' own answer, for what its _apply_weight_decay passes (Keras 3 on TF: the tf.Variable),
        leaving its cache (Keras 3) as it was."""
        opt = self.optimizer
        asked = variable if KERAS2 or not isinstance(variable, keras.Variable) else variable.value
        state = vars(opt)
        had = "_exclude_from_weight_decay_cache" in state
        saved = dict(state["_exclude_from_weight_decay_cache"]) if had else None
        try:
            return bool(opt._use_weight_decay(asked))
        finally:
            if had:
                state["_exclude_from_weight_decay_cache"].clear()
                state["_exclude_from_weight_decay_cache"].update(saved)
            else:
                state.pop("_exclude_from_weight_decay_cache", None)

    def _decay_settings(self) -> list[DecaySetting]:
        """exclude_from_weight_decay(var_list=..., var_names=...), of which Keras keeps the last call's:
        what it exempts is Keras' own answer (_use_weight_decay); a name that matches no variable's
        name as Keras matches it (re.search on the tf.Variable's name) is unmatched."""
        import re
        opt, state = self.optimizer, vars(self.optimizer)
        keys = list(state.get("_exclude_from_weight_decay") or [])
        if KERAS2:  # sorted as Keras 3 (which keeps them as one pattern) must show them
            names = sorted(state.get("_exclude_from_weight_decay_names") or [])
        else:
            pattern = state.get("_exclude_from_weight_decay_pattern")
            names = sorted(pattern.pattern.split("|")) if pattern is not None else []
        if not names and not keys:
            return []
        params = [(name, variable) for name, (variable, p) in self._variables.items() if not p.statistic]
        asked = {n: (v if KERAS2 or not isinstance(v, keras.Variable) else v.value).name for n, v in params}
        excludes = [n for n, v in params if not self._use_weight_decay(v)]
        unmatched = [x for x in names if not any(re.search(x, asked[n]) for n, _ in params)]
        inside = {opt._var_key(v) for _, v in params}
        outside = sum(key not in inside for key in keys)
        unmatched += [f"var_list: {outside} variable(s) outside this model"] if outside else []
        parts = ([f"var_list=[{len(keys)} variable(s)]"] if keys else []) + ([f"var_names={names!r}"] if names else [])
        return [DecaySetting(setting=f"exclude_from_weight_decay({', '.join(parts)})", names=names,
                             excludes=excludes, unmatched=unmatched)]

    def inventory(self) -> Inventory:
        return Inventory(
            framework="tensorflow", version=str(tf.__version__), model_type=_type(self.model),
            params=[param for _, param in self._variables.values()],
            layers=[Layer(path=path, type=_type(layer), registered=registered)
                    for path, (layer, registered) in self._layers.items() if path],
            decay_settings=self._decay_settings(), has_modes=False)

    # ---------------------------------------------------------------- reading
    def values(self):
        for name, (variable, _) in self._variables.items():
            yield name, np.array(variable.numpy(), copy=True)

    def replica_values(self, replicas: int):
        """A distributed variable's component on each replica (MirroredStrategy's per-device copies: a statistic each
        replica updated with its own rows differs there, while the variable reads as one of them, or their mean)."""
        for name, (variable, _) in self._variables.items():
            backing = variable if KERAS2 or not isinstance(variable, keras.Variable) else variable.value
            parts = backing.values if isinstance(backing, tf.distribute.DistributedValues) else (backing,) * replicas
            yield name, [np.array(part.numpy(), copy=True) for part in parts]

    def _name_of(self, variable):
        return self._by_key.get(id(variable))

    def _record(self, grads, variables) -> None:
        """At the update, before it runs: eagerly the gradients' values; in a graph being traced, the
        ops that count the update and what it received (and with graph_values, their values)."""
        if tf.executing_eagerly():
            seen = {}
            for grad, variable in zip(grads, variables):
                name = self._name_of(variable)
                if name is None:
                    continue
                if grad is None:
                    seen.setdefault(name, ("none", None))
                else:
                    seen[name] = grad_state(np.asarray(tf.convert_to_tensor(grad)))
            held = {name: ("none", None) for name, (_, p) in self._variables.items() if p.in_optimizer}
            self._updates.append({"grads": {**held, **seen}, "model_training": None, "modes": {}})
            return
        self._graph_count.assign_add(1)  # consumes no gradient: the update is compiled as without it
        for grad, variable in zip(grads, variables):
            name = self._name_of(variable)
            if name is None or grad is None:
                continue
            self._received[name].assign_add(1)
            if self.graph_values:
                nonzero, norm = self._values[name]
                dense = tf.convert_to_tensor(grad)
                nonzero.assign(tf.logical_or(nonzero, tf.reduce_any(tf.not_equal(dense, tf.zeros_like(dense)))))
                norm.assign(tf.maximum(norm, tf.norm(tf.reshape(tf.cast(dense, tf.float64), [-1]))))

    def _graph_updates(self) -> list[dict]:
        count = int(self._graph_count.numpy())
        if not count:
            return []
        grads = {}
        for name, received in self._received.items():
            if int(received.numpy()):
                received.assign(0)
                if self.graph_values:
                    nonzero, norm = self._values[name]
                    grads[name] = ("nonzero" if bool(nonzero.numpy()) else "zero", float(norm.numpy()))
                    nonzero.assign(False)
                    norm.assign(0.0)
                else:
                    grads[name] = ("unread", None)
            elif self._variables[name][1].in_optimizer:
                grads[name] = ("none", None)
        self._graph_count.assign(0)
        return [{"grads": grads, "model_training": None, "modes": {}}] + \
            [{"grads": {}, "model_training": None, "modes": {}} for _ in range(count - 1)]

    def install(self) -> None:
        opt, method = self.optimizer, "apply_gradients" if KERAS2 else "apply"
        with tf.init_scope():  # the probe's own counters, outside any graph being traced
            self._graph_count = tf.Variable(0, dtype=tf.int64, trainable=False, name="audit_updates")
            self._received = {name: tf.Variable(0, dtype=tf.int64, trainable=False, name="audit_received")
                              for name in self._variables}
            self._values = {name: (tf.Variable(False, trainable=False, name="audit_nonzero"),
                                   tf.Variable(0.0, dtype=tf.float64, trainable=False, name="audit_norm"))
                            for name in self._variables} if self.graph_values else {}
        state = vars(opt)
        self._installed = {"method": method, "had": method in state, "own": state.get(method)}
        original = getattr(opt, method)

        if KERAS2:
            def wrapper(grads_and_vars, *args, **kwargs):
                pairs = list(grads_and_vars)
                self._record([g for g, _ in pairs], [v for _, v in pairs])
                return original(pairs, *args, **kwargs)
        else:
            def wrapper(grads, trainable_variables=None, *args, **kwargs):
                grads = list(grads)  # Keras' apply takes lists; an iterator is read once, here
                if trainable_variables is not None:
                    trainable_variables = list(trainable_variables)
                self._record(grads, trainable_variables if trainable_variables is not None else
                             list(getattr(opt, "_trainable_variables", [])))
                return original(grads, trainable_variables, *args, **kwargs)
        state[method] = wrapper  # the instance's own attribute, past Keras' __setattr__ tracking
        self._iterations = int(opt.iterations.numpy())
        if isinstance(self.model, keras.Model):  # kept as it is: tracing it again would change the step
            self._installed["train_function"] = self.model.train_function

    def uninstall(self) -> None:
        if not self._installed:
            return
        state, method = vars(self.optimizer), self._installed["method"]
        if self._installed["had"]:
            state[method] = self._installed["own"]
        else:
            state.pop(method, None)
        if "train_function" in self._installed:
            self.model.train_function = self._installed["train_function"]
        self._installed = {}

    def take_updates(self) -> list[dict]:
        updates, self._updates = self._updates + self._graph_updates(), []
        now = int(self.optimizer.iterations.numpy())
        unseen = now - self._iterations - len(updates)  # updates run by a graph traced before install
        self._iterations = now
        if unseen > 0:
            raise AuditInputError(
                f"the optimizer updated {unseen} time(s) in a graph traced before the audit, which the audit "
                "cannot read (fit's train function of a model fitted before, or a tf.function step called "
                "before): hand over a model not fitted yet and a step function not called yet")
        return updates
