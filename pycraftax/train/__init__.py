"""Training: the NumPy reference PPO-RNN (the spec) and the CPU trainer over the C env.

    from pycraftax.train import numpy_ppo, TrainConfig, Trainer
"""

from pycraftax.train.numpy_ppo import LossConfig, ModelConfig, init_params  # noqa: F401


def __getattr__(name):  # lazy: the trainer imports the env
    if name in ("TrainConfig", "Trainer", "train", "evaluate"):
        from pycraftax.train import trainer

        return getattr(trainer, name)
    raise AttributeError(name)
