"""``hiersum serve``: an HTTP summarization service on LitServe (:func:`hiersum.serving.server.serve`), its
request checks (:mod:`hiersum.serving.requests`), its API (:mod:`hiersum.serving.api`) and the page at ``/``
(``static/index.html``). The stage after ``commands``: it answers a request with what ``hiersum summarize``
writes for the same record."""
