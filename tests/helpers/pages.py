"""Reading what the pages show."""

import re


def figure(html, name):
    """The figure's text, whether or not it links to the list behind it."""
    match = re.search(rf'data-figure="{name}"[^>]*>(?:<a href="([^"]*)">)?([^<]*)<', html)
    assert match, name
    return match.group(2).strip()
