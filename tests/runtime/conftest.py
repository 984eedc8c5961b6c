import pytest
from factories import torch_node as make_torch_node


@pytest.fixture
def torch_node() -> dict:
    return make_torch_node()
