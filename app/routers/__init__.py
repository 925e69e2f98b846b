"""The routes: one APIRouter per page or JSON API concern, and what they share (rendering, forms, errors)."""
