"""An example trainer that is not the built-in one: house prices from tabular features (Keras regression).

It follows docs/trainer-contract.md: model and metrics.json in AIP_MODEL_DIR, checkpoints under
AIP_CHECKPOINT_DIR (resumed after a restart), TensorBoard logs under AIP_TENSORBOARD_LOG_DIR.
"""
