"""Packaging for sample_factory: a high-throughput asynchronous RL library (APPO / V-trace)."""

from setuptools import find_packages, setup

with open("README.md", encoding="utf-8") as readme:
    long_description = readme.read()

core_requirements = [
    "torch>=2.1",
    "numpy>=1.26,<3",
    "faster-fifo>=1.4.5,<2",
    # Sample Factory 2.1.1 projects pin gymnasium 0.28/0.29 and numpy 1.26; make test-compat runs the core of the
    # suite with gymnasium 0.29.1 and numpy 1.26.4, make test with the newest
    "gymnasium>=0.28.1,<2",
    "tensorboardX>=2.6",
    "psutil>=5.9",
    "threadpoolctl>=3.1",
    "setproctitle>=1.3",
]

extras = {
    "vizdoom": ["vizdoom>=1.2.3", "opencv-python-headless>=4.8"],
    # Gymnasium's v5 MuJoCo tasks; OpenCV writes enjoy's MP4s
    "mujoco": ["mujoco>=3.1", "gymnasium[mujoco]>=1.0", "opencv-python-headless>=4.8"],
    # ale-py >= 0.9 ships the game ROMs; OpenCV resizes frames to 84x84 and writes MP4s
    "atari": ["ale-py>=0.9", "opencv-python-headless>=4.8"],
    "nethack": ["nle>=1.3"],  # the NetHack Learning Environment; NLE pins gymnasium (1.3.0: gymnasium==1.2.0)
    # PettingZoo's butterfly envs (pygame, pymunk: plain wheels); OpenCV resizes their image observations
    "pettingzoo": ["pettingzoo[butterfly]>=1.25", "opencv-python-headless>=4.8"],
    # natively batched Atari/MuJoCo simulators (wheels for Linux and macOS, Python >= 3.11)
    "envpool": ["envpool>=1.2; python_version >= '3.11'"],
    "brax": ["brax>=0.12", "opencv-python-headless>=4.8"],  # jax physics tasks (jax's CPU build); OpenCV: frames, MP4s
    "onnx": ["onnx>=1.16", "onnxruntime>=1.18"],
    "wandb": ["wandb>=0.17"],
    "video": ["imageio>=2.34", "imageio-ffmpeg>=0.5"],
    # sharing agents on the Hugging Face Hub (sample_factory.huggingface); tested with huggingface_hub 2.4
    "huggingface": ["huggingface_hub>=0.25"],
    "dev": [
        "pytest>=8",
        "pytest-timeout>=2.3",
        "ruff>=0.6",
        "mkdocs>=1.6",
        "mkdocs-material>=9.5",
        "matplotlib>=3.8",
        "tensorboard>=2.16",
    ],
}

setup(
    name="sample-factory",
    version="2.2.0.dev0",
    description="High-throughput asynchronous reinforcement learning (APPO, V-trace) compatible with Sample Factory 2",
    long_description=long_description,
    long_description_content_type="text/markdown",
    license="MIT",
    python_requires=">=3.10",
    packages=find_packages(include=["sample_factory", "sample_factory.*", "sf_examples", "sf_examples.*"]),
    install_requires=core_requirements,
    extras_require=extras,
    include_package_data=True,
    # flag declarations (sample_factory/utils/flag_table.py reads them at run time)
    package_data={
        "sample_factory.cfg": ["*.tsv"],
        "sample_factory.launcher": ["*.tsv"],
        "sample_factory.tune": ["*.tsv"],
    },
    # how generic tools (python -m sample_factory.eval) learn the example env families without the library
    # importing sf_examples: see sample_factory/envs/env_families.py
    entry_points={"sample_factory.env_families": ["sf_examples = sf_examples.families:register_example_families"]},
    classifiers=[
        "Programming Language :: Python :: 3",
        "License :: OSI Approved :: MIT License",
        "Operating System :: POSIX :: Linux",
    ],
)
