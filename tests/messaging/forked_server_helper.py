"""A user module of ``forked_server_train.py``: a global its ``main()`` changes before training."""

SETTING = "as imported"
