# For type checkers: the deprecated name is the new module (__init__.py makes it so at run time).
from groundsense.calibration.resampling import *  # noqa: F403
