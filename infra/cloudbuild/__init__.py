"""Build the trainer image in Cloud Build: context archive, build provider, builder identity, component."""
