"""A test-only model family, written the way a new family is written, to
prove that a family needs no edit outside its own folder: the app serves
it, its captures of every segment reach the Explore page, and lesions
apply to it. Importing this package registers it.

The model reads its input segment by segment and carries a state from one
segment to the next (the shape of a recurrent memory): in every segment
the state slots and the segment's tokens attend to each other, and the
state slots' outputs become the next segment's state.
"""

from inference.core.family import register
from tests.toy_family.family import FAMILY

register(FAMILY)
