"""Local paths in the pipeline file (`output.uri`, `browser.executable`): the lengths the file
system allows, checked by the models and stated in the JSON Schema, so an over-long path is one
line naming the key, not an `OSError: File name too long` traceback from whatever touched the
path first (`validate`'s checks, the run's claim of the output).

The models count bytes (UTF-8), as the kernel does; the JSON Schema can only count characters,
so it states the same limits in characters (`maxLength`, and a pattern for the components): a
path it refuses the models refuse too, and the models also refuse a path of 255 characters that
is more than 255 bytes.
"""

from __future__ import annotations

from pydantic.config import JsonDict

NAME_MAX = 255  # bytes of one path component (Linux and macOS file systems)
PATH_MAX = 4096  # bytes of a whole path, its final NUL included (Linux)
COMPONENTS = r"(?:[^/]{0,255}/)*[^/]{0,255}"  # every component at most NAME_MAX characters


def path_schema(also: str = "") -> JsonDict:
    """The JSON Schema's statement of the limits (beside the field's own `maxLength`); `also`:
    a pattern of other values the field takes whatever their components (`s3://.*`)."""
    pattern = f"^(?:{also}|{COMPONENTS})$" if also else f"^{COMPONENTS}$"
    return {"pattern": pattern}


def check_path_length(path: str, key: str) -> str:
    """`path` itself when the file system can name it; ValueError naming `key`, the part that
    is too long and the fix otherwise."""
    size = len(path.encode("utf-8", "surrogateescape"))
    if size >= PATH_MAX:
        raise ValueError(
            f"{key} is {size:,} bytes long, more than a path may be ({PATH_MAX - 1:,}). "
            "fix: a shorter path"
        )
    longest = max(path.split("/"), key=lambda part: len(part.encode("utf-8", "surrogateescape")))
    size = len(longest.encode("utf-8", "surrogateescape"))
    if size > NAME_MAX:
        raise ValueError(
            f"{key} has a part of {size} bytes ({longest[:24]!r}…), more than a file or folder "
            f"name may be ({NAME_MAX}). fix: a shorter name"
        )
    return path
