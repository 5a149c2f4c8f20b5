"""An example trainer that is not the built-in one: house prices from tabular features (Keras regression).

It follows docs/trainer-contract.md: model under AIP_MODEL_DIR with metrics.json beside it, checkpoints under
AIP_CHECKPOINT_DIR (resumed after a restart), TensorBoard logs under AIP_TENSORBOARD_LOG_DIR.
"""
