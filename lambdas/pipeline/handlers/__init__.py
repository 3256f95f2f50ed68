"""Lambda entry points. Each module exposes `create_handler(environ)`, which builds the handler
from the variables the template gives the function, and `handler`, the entry point Lambda calls,
which builds it once per cold start from `os.environ`. Nothing reads the environment at import
time, so the local runtime can hold several functions, and several warm instances of one function,
in one process."""
