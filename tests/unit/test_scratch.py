"""The engine's scratch folder: a folder per compile, swept after worker replacements."""
from __future__ import annotations

import os

from xla_service.passes.scratch import Scratch


def test_a_compile_folder_goes_when_its_block_ends_even_on_error(tmp_path):
    scratch = Scratch(str(tmp_path))
    with scratch.folder() as dump_dir:
        assert os.path.dirname(dump_dir) == scratch.path and os.path.isdir(dump_dir)
    assert not os.path.exists(dump_dir)
    try:
        with scratch.folder() as dump_dir:
            raise RuntimeError("the compile failed")
    except RuntimeError:
        pass
    assert os.listdir(scratch.path) == []
    scratch.close()
    assert not os.path.exists(scratch.path)


def test_sweep_removes_what_dead_workers_left_only_after_a_replacement(tmp_path):
    scratch = Scratch(str(tmp_path))
    left = os.path.join(scratch.path, "step-left-behind")
    os.mkdir(left)
    os.mkdir(os.path.join(scratch.path, "count-0"))  # the workers' counters stay
    with scratch.folder() as live:
        scratch.sweep(replaced=0)  # no worker replaced: nothing to sweep
        assert os.path.isdir(left)
        scratch.sweep(replaced=1)
        assert not os.path.exists(left)
        assert os.path.isdir(live)  # a live compile's folder stays
        os.mkdir(left)
        scratch.sweep(replaced=1)  # swept once per replacement
        assert os.path.isdir(left)
    assert sorted(os.listdir(scratch.path)) == ["count-0", "step-left-behind"]
    scratch.close()
