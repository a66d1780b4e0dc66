"""Run descriptions for the launcher.

``python -m sample_factory.launcher.run --run=sf_examples.vizdoom.experiments.X``
"""

# what the two PBT experiments share: 8 policies trained for 2B env steps on one 32-worker GPU node, a recurrent
# policy on 128x72 4:3 frames, an action every 2nd frame
DOOM_PBT_8_POLICIES = (
    "python -m sf_examples.vizdoom.train_vizdoom --train_for_env_steps=2000000000 --num_policies=8 --with_pbt=True "
    "--pbt_period_env_steps=5000000 --pbt_start_mutation=100000000 --num_workers=32 --batch_size=2048 "
    "--env_frameskip=2 --use_rnn=True --res_w=128 --res_h=72 --wide_aspect_ratio=False --gamma=0.995"
)
