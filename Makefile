# Two commands from a fresh clone: `make train` and `make test`.
# TORCH is the torch requirement; GPU users override it, e.g. make test TORCH="torch==2.13.0+cu128".
TORCH ?= torch==2.13.0
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
EXTRAS ?= dev,vizdoom,mujoco,atari,pettingzoo,envpool,brax,video,onnx,wandb,huggingface
PYTEST_ARGS ?=
# make train resumes the same experiment by default; RESTART=restart moves the old one aside
RESTART ?= resume
# make bench: this repository against Sample Factory 2.1.1 (installed once into a scratch venv), runs alternated;
# BENCH lists workloads (python bench/compare_sf2.py --list), REPS the runs of each system
BENCH ?= cartpole_matched
REPS ?= 2
# make zoo: the task (python bench/zoo.py --list), its seed, and an optional limit on this call's training hours
TASK ?= mujoco_pendulum
SEED ?= 1
HOURS ?=
# folder of the private Slurm cluster of `make slurm-up` (config, state, logs)
SLURM_DIR ?= /tmp/sf_slurm
# make test-compat: the oldest supported stack in a second venv: the oldest torch setup.py allows (PyPI's build, with
# its CUDA libraries: about 5 GB) and the gymnasium and numpy that Sample Factory 2.1.1 projects pin
COMPAT_VENV ?= .venv-compat
COMPAT_PY := $(COMPAT_VENV)/bin/python
COMPAT_TORCH ?= torch==2.1.2
COMPAT_PINS ?= gymnasium==0.29.1 numpy==1.26.4
# the core subset run there: user-code conformance, envs, every runner mode, checkpoints, the version-checked code,
# the optimiser and the fast paths (whose tests of torch's private paths are skipped there, their fallbacks tested)
COMPAT_TESTS ?= tests/user_code tests/envs tests/lifecycle/test_sf2_checkpoints.py \
	tests/compat "tests/algo/runners/test_training_modes.py::test_mode_trains_and_cleans_up" \
	tests/algo/learning/test_optimizers.py tests/algo/learning/test_learner_fast_paths.py \
	tests/model/test_direct_calls.py tests/model/test_fast_path_checks.py tests/model/test_running_mean_std.py

# A test run starts hundreds of Python processes: let them reuse the package's compiled bytecode (__pycache__,
# git-ignored) even where the environment turns writing it off.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup train test test-slow test-compat lint format docs bench zoo clean slurm-deps slurm-up slurm-down

setup: $(VENV)/.installed

# Re-run the install whenever setup.py changes. torch is installed first, and only
# when the venv lacks a torch that satisfies $(TORCH), so an installed build is reused.
$(VENV)/.installed: setup.py Makefile
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install -q --upgrade pip
	@$(PY) -c "import importlib.metadata as m, sys; from packaging.requirements import Requirement as R; r = R('$(TORCH)'); sys.exit(0 if r.specifier.contains(m.version('torch').split('+')[0], prereleases=True) else 1)" 2>/dev/null \
		|| $(PY) -m pip install "$(TORCH)"
	$(PY) -m pip install -q -e ".[$(EXTRAS)]"
	@# NetHack's NLE pins one gymnasium release (1.3.0: gymnasium==1.2.0); it runs on the newest one the suite
	@# tests with (tests/nethack), so it is installed without its pins
	$(PY) -m pip install -q --no-deps "nle>=1.3" pybind11
	@touch $@

train: setup
	$(PY) -m sf_examples.train_gym_env --env=CartPole-v1 --experiment=cartpole_make_train \
		--num_workers=2 --num_envs_per_worker=8 --train_for_env_steps=300000 --device=cpu --seed=1 \
		--restart_behavior=$(RESTART)

test: setup slurm-deps
	$(PY) -m pytest $(PYTEST_ARGS)

# The launcher's Slurm tests start a private one-node cluster from Debian's slurm-wlm (tests/launcher/slurm_cluster.py).
# Installed here when missing, as root with apt-get (about a minute); elsewhere those tests are skipped and pytest's
# summary says why.
slurm-deps:
	@if command -v slurmctld >/dev/null 2>&1 && command -v slurmd >/dev/null 2>&1 && command -v sbatch >/dev/null 2>&1; then \
		:; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing slurm-wlm for the launcher's Slurm tests"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get install -y -q --no-install-recommends slurm-wlm >/dev/null \
			|| { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends slurm-wlm >/dev/null; } \
			|| echo "could not install slurm-wlm: the launcher's Slurm tests will be skipped"; \
	else \
		echo "slurm-wlm is missing and cannot be installed here (needs root and apt-get): the Slurm tests will be skipped"; \
	fi

test-slow: setup
	$(PY) -m pytest -m slow $(PYTEST_ARGS)

# $(COMPAT_TORCH) with $(COMPAT_PINS) instead of the newest torch, gymnasium and numpy (rebuilt when setup.py changes)
$(COMPAT_VENV)/.installed: setup.py Makefile
	@test -x $(COMPAT_PY) || $(PYTHON) -m venv $(COMPAT_VENV)
	@$(COMPAT_PY) -m pip install -q --upgrade pip
	@$(COMPAT_PY) -c "import importlib.metadata as m, sys; from packaging.requirements import Requirement as R; r = R('$(COMPAT_TORCH)'); sys.exit(0 if r.specifier.contains(m.version('torch').split('+')[0], prereleases=True) else 1)" 2>/dev/null \
		|| $(COMPAT_PY) -m pip install -q "$(COMPAT_TORCH)" $(COMPAT_PINS)
	$(COMPAT_PY) -m pip install -q -e ".[dev,vizdoom,video]" "$(COMPAT_TORCH)" $(COMPAT_PINS)
	@touch $@

test-compat: $(COMPAT_VENV)/.installed
	$(COMPAT_PY) -m pytest $(COMPAT_TESTS) $(PYTEST_ARGS)

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: setup
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

docs: setup
	$(PY) docs/gen_flags.py > docs/flags.md
	$(PY) docs/gen_results.py
	$(PY) docs/plots/make_plots.py
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build -q --strict

bench: setup
	$(PY) bench/compare_sf2.py --reps=$(REPS) $(BENCH)

# make zoo TASK=mujoco_hopper [SEED=1] [HOURS=2]: train a zoo task to its published budget (resumable), evaluate, record
zoo: setup
	$(PY) bench/zoo.py $(TASK) --seed=$(SEED) $(if $(HOURS),--max_hours=$(HOURS),)

# a one-node Slurm cluster to try the launcher's slurm backend on: prints the SLURM_CONF to export
slurm-up: setup slurm-deps
	$(PY) tests/launcher/slurm_cluster.py up --dir=$(SLURM_DIR)

slurm-down: setup
	$(PY) tests/launcher/slurm_cluster.py down --dir=$(SLURM_DIR)

clean:
	rm -rf $(VENV) $(COMPAT_VENV) build *.egg-info
