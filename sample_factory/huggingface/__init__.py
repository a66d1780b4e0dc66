"""Sharing trained agents on the Hugging Face Hub (the optional ``huggingface`` extra).

``push_to_hub`` uploads an experiment folder (model card, config.json, latest checkpoints, replay video);
``load_from_hub`` downloads one into a train_dir, where enjoy, eval and training use it like any experiment.
:mod:`sample_factory.huggingface.huggingface_utils` offers the same as Sample Factory 2's functions (model card,
replay video, ``push_to_hf``, ``load_from_hf``). Only :mod:`sample_factory.huggingface.hub_client` imports
``huggingface_hub``, when a transfer starts.
"""
