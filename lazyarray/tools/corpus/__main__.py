"""``python -m lazyarray.tools.corpus``: the corpus table (see `lazyarray.tools.corpus.runner`)."""

import sys

from lazyarray.tools.corpus.runner import main

if __name__ == "__main__":
    sys.exit(main())
