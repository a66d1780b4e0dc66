"""Names of the components and the whole message flow between them, in one place.

Data flow (every arrow is a small message; bulk data stays in shared memory):

    Runner --on_begin_sampling--> RolloutWorker
    RolloutWorker --on_policy_request(worker, split, t, slots)--> InferenceWorker (of the actor's policy)
    RolloutWorker --on_policy_requests(worker, [(split, t, slots), ...])--> InferenceWorker   (the splits stepped
        on one reply, in one message)
    InferenceWorker --on_actions_ready(splits, policy)--> RolloutWorker
    RolloutWorker --on_new_trajectories(slots, frames)--> Batcher (of the trajectory's policy)
    Batcher --on_batch_ready(batch_idx, env_steps)--> LearnerWorker   (same loop: handled in the same iteration)
    LearnerWorker --on_training_done(batch_idx, release_slots)--> Batcher  (frees the batch, in sync mode the
        slots too unless release_slots is False: exact resume keeps the sampler at rest at the end of the run)
    Batcher --on_slots_freed(slots)--> RolloutWorker (the slots' owner; async: once copied, sync: once trained)
    sampler consumer (no learner) --on_slots_freed(slots)--> RolloutWorker (once the trajectory is copied out)
    RolloutWorker --on_episodes_finished(stats)--> Runner
    LearnerWorker --on_train_stats(policy, stats, env_steps)--> Runner
    LearnerWorker --on_env_steps(policy, env_steps)--> Runner   (once at start: the count resumed from)
    Runner --on_evaluate(policy, env_steps)--> Evaluator   (--eval_every_env_steps: one request at a time, when due)
    Evaluator --on_evaluation_done(policy, env_steps, results)--> Runner   (or on_evaluation_failed(policy, error))
    every component --on_component_ready / on_heartbeat / on_component_error / on_component_stopped--> Runner
    Runner --on_stop_requested--> every component (the learner's takes save: whether to write a checkpoint)

Restarts (parallel mode, ``runners.respawn``; every ``*_lost`` is answered with on_restart_ack(token, name, data)):

    Runner --on_rollout_worker_lost(worker, token)--> InferenceWorker, Batcher (data: its slots the batcher holds)
    Runner --on_rollout_worker_restarted(worker)--> Batcher (hands over the slots it kept meanwhile)
    Runner --on_inference_worker_lost(name, token) / on_inference_worker_restarted(name)--> RolloutWorker
    Runner --on_learner_lost(policy, token) / on_learner_restarted(policy)--> RolloutWorker
    RolloutWorker --on_envs_recreated(name, count, error)--> Runner  (--env_error_behavior=recreate)
    child process --on_process_traceback(loop, traceback)--> Runner  (the exception that ends it)

Trajectory slots: each slot belongs to one rollout worker (``shared_buffers.SlotOwners``), which alone hands
it out; ``on_slots_freed`` returns it and resumes any split of that worker waiting for slots (no polling).

Delivery: no message is dropped; a full inbox blocks the sender (back-pressure) and only the inbox of a loop
that has exited makes the send fail, as an error of the destination component (see ``event_loop``).

Processes (parallel mode): one per rollout worker, one per inference worker, one
per policy for its batcher + learner, one for the evaluator when it is on; the
runner is the main process. In serial
mode every component lives on the runner's loop. A batcher and its learner share
only the batch buffers (``learning.batch_buffers``, allocated once on the
learner's device by ``learning.loop_specs.build_learner``); the buffers' indices
and counts travel in the two messages above.

The names below are addresses. What a component is (rollout, inference, batcher,
learner) and its worker index or policy are fields of its ``LoopSpec``
(``runners.components``): nothing parses a name to find them out.
"""

from __future__ import annotations

from sample_factory.messaging.event_loop import RUNNER

__all__ = ["RUNNER", "batcher_name", "evaluator_name", "inference_worker_name", "learner_name", "rollout_worker_name"]


def rollout_worker_name(worker_idx: int) -> str:
    return f"rollout_w{worker_idx}"


def inference_worker_name(policy_id: int, worker_idx: int) -> str:
    return f"inference_p{policy_id}_w{worker_idx}"


def batcher_name(policy_id: int) -> str:
    return f"batcher_p{policy_id}"


def learner_name(policy_id: int) -> str:
    return f"learner_p{policy_id}"


def evaluator_name() -> str:
    return "evaluator"
