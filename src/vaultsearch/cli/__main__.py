import sys

from vaultsearch.cli.main import main

sys.exit(main())
