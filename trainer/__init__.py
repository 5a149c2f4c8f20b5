"""The training application: TFRecords preparation and transfer-learning training (Docker build context)."""

import os
import sys

# Keras 3's fit does not run under MultiWorkerMirroredStrategy (keras-team/keras#20585); tf_keras (Keras 2)
# does. TensorFlow reads this once, at import, so it is set here, before any trainer module imports it.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

if sys.argv[:1] == ["-m"]:  # run as `python -m trainer.<command>` (argv[0] is "-m" while it is found)
    from trainer import startup

    # TensorFlow's start-up lines held back; the command's main() passes the rest on (trainer/startup.py).
    startup.hold()
