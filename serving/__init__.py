"""The prediction server of the serving image: `python -m serving` answers Vertex AI's custom-container
requests with the SavedModel a training job exported, run by the TensorFlow that trained it."""
