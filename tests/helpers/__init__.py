"""What the tests share, imported by the test modules and the fixtures of the ``conftest.py`` files.

``paths`` (the checkout, the sample corpus, ``../shared``), ``config`` (the one tiny config of the suite),
``corpus`` (the tiny corpus and its variants), ``model`` (a tiny network and a ragged batch), ``pretrained``
(a tiny local BERT), ``official`` (the official hiersumm fixtures), ``cli`` (running the console scripts).
"""
