"""The MuJoCo env family: Sample Factory 2's ``mujoco_*`` names on Gymnasium's v5 MuJoCo tasks."""
