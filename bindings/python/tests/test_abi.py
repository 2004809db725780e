"""The ctypes mirrors match the library's structs, so a header change cannot
silently break the package (docs/c-api.md §3: transcribe_abi_struct_size/_align)."""

from __future__ import annotations

import ctypes

import transcribe
from transcribe import _structs as S


def test_every_struct_mirror_matches_the_library(lib):
    for which, cls in S.ABI_MIRRORS.items():
        size = lib.abi_struct_size(which)
        align = lib.abi_struct_align(which)
        assert size > 0, f"library cannot tell the size of ABI id {which}"
        assert ctypes.sizeof(cls) == size, (
            f"{cls.__name__}: mirror has {ctypes.sizeof(cls)} bytes, the library {size}: "
            "update transcribe/_structs.py to the header"
        )
        assert ctypes.alignment(cls) == align, f"{cls.__name__}: alignment"


def test_no_struct_id_without_a_mirror(lib):
    # ids are append-only: a new one needs a mirror here
    assert lib.abi_struct_size(len(S.ABI_MIRRORS)) == 0


def test_run_params_offsets_are_the_documented_ones():
    # docs/c-api.md §19, LP64
    want = dict(task=8, timestamps=12, pnc=16, itn=20, diarize=24, language=32,
                target_language=40, keep_special_tags=48, family=56, spec_k_drafts=64)
    for name, off in want.items():
        assert getattr(S.RunParams, name).offset == off, name


def test_init_functions_stamp_the_library_size(lib):
    inits = {
        S.ModelLoadParams: lib.model_load_params_init,
        S.SessionParams: lib.session_params_init,
        S.RunParams: lib.run_params_init,
        S.StreamParams: lib.stream_params_init,
        S.Capabilities: lib.capabilities_init,
        S.Timings: lib.timings_init,
        S.Segment: lib.segment_init,
        S.Word: lib.word_init,
        S.Token: lib.token_init,
        S.StreamUpdate: lib.stream_update_init,
        S.StreamText: lib.stream_text_init,
        S.SessionLimits: lib.session_limits_init,
        S.DeviceInfo: lib.device_info_init,
        S.SpeakerSegment: lib.speaker_segment_init,
    }
    for cls, init in inits.items():
        obj = lib.new(cls, init)
        assert obj.struct_size == lib.abi_size(cls), cls.__name__
    p = lib.new(S.RunParams, lib.run_params_init)
    assert p.timestamps == S.TIMESTAMP_KINDS["auto"] and p.spec_k_drafts == -1


def test_status_names_match_the_library(lib):
    for st in S.STATUS_NAMES:
        assert lib.status_text(st) and lib.status_text(st) != "unknown status"
    assert lib.status_text(len(S.STATUS_NAMES)) == "unknown status"


def test_versions(lib):
    major, minor, _ = transcribe.library_version().split(".")
    assert f"{major}.{minor}" == ".".join(transcribe.__version__.split(".")[:2])
    assert transcribe.library_path() == lib.path
