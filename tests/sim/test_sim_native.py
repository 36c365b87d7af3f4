"""The simulator's C core called directly through pagelab._native: parser, checks, CPUID."""

import errno
import random

import numpy as np
import pytest

from pagelab._native import ffi, lib


def read_all(path, cap=4):
    """Every data record of a trace as (op, addr, size), through small chunks; or the error."""
    out = ffi.new("struct pl_trace **")
    assert lib.pl_trace_open(str(path).encode(), out) == 0
    t = ffi.gc(out[0], lib.pl_trace_close)
    addr, size, op = (
        ffi.new("uint64_t[]", cap),
        ffi.new("uint32_t[]", cap),
        ffi.new("uint8_t[]", cap),
    )
    records = []
    while True:
        n = lib.pl_trace_read(t, addr, size, op, cap)
        if n < 0:
            return records, (n, t.line, ffi.string(t.err).decode())
        if n == 0:
            return records, t
        records += [(op[i], addr[i], size[i]) for i in range(n)]


def test_parser_reads_lackey_records_and_skips_the_rest(tmp_path):
    """Banners, blank lines and I records are skipped; comments after the size are allowed;
    CRLF endings, a 0x prefix and a last line without newline are fine."""
    p = tmp_path / "t"
    p.write_bytes(
        b"==1== Lackey\r\n--1-- note\n**1** warning\n\n"
        b"I  04000c1e,3\n L 7ff000398,8\n S 10,1 00001010\r\n"
        b"\t M 0x20,4\n L ffffffffffffffff,1"
    )
    records, t = read_all(p)
    assert records == [
        (lib.PL_OP_LOAD, 0x7FF000398, 8),
        (lib.PL_OP_STORE, 0x10, 1),
        (lib.PL_OP_MODIFY, 0x20, 4),
        (lib.PL_OP_LOAD, 2**64 - 1, 1),
    ]
    assert (t.line, t.instr, t.loads, t.stores, t.modifies, t.skipped) == (9, 1, 2, 1, 1, 4)


@pytest.mark.parametrize(
    "line,why",
    [
        (" X 10,1", "not a lackey record"),
        (" L10,1", "not a lackey record"),
        (" L 10", "expected ','"),
        (" L ,4", "missing hexadecimal address"),
        (" L 10,", "missing decimal size"),
        (" L 10,0", "size 0"),
        (" L 10,1x", "unexpected text after the size"),
        (" L 1ffffffffffffffff,1", "does not fit in 64 bits"),
        (" L 10,4294967296", "larger than a lackey record holds"),
        (" L 10,513", "larger than a lackey record holds"),
        ("hello", "not a lackey record"),
    ],
)
def test_parser_names_the_malformed_line(tmp_path, line, why):
    """A malformed record stops the parse with -EBADMSG, its line number and the reason."""
    p = tmp_path / "t"
    p.write_text(f"==1== banner\n L 10,1\n{line}\n L 20,1\n")
    _, (rc, lineno, err) = read_all(p)
    assert rc == -errno.EBADMSG
    assert lineno == 3
    assert why in err


@pytest.mark.parametrize(
    "line,record",
    [
        ("I  10,1", "I"),  # lackey's instruction layout: the parser's shortcut
        (" L 10,2", (lib.PL_OP_LOAD, 0x10, 2)),  # lackey's data layout: the shortcut
        (" I 10,1", "I"),
        ("L  10,2", (lib.PL_OP_LOAD, 0x10, 2)),
        (" S\t10,2", (lib.PL_OP_STORE, 0x10, 2)),
        ("I   10,1", "I"),  # three blanks: the general path
        ("  M 10,2", (lib.PL_OP_MODIFY, 0x10, 2)),
        ("\tL 10,2", (lib.PL_OP_LOAD, 0x10, 2)),
        (" L  0x10,2", (lib.PL_OP_LOAD, 0x10, 2)),
        ("IL 10,1", None),
        (" LL 10,1", None),
        ("I  ,1", None),
        (" L \n", None),
    ],
)
def test_parser_shortcut_for_lackey_layouts_reads_as_the_general_grammar(tmp_path, line, record):
    """Lines in lackey's own layouts and their near misses parse as the grammar says: the same
    record, an instruction counted, or a malformed line."""
    p = tmp_path / "t"
    p.write_text(line + "\n")
    records, t = read_all(p)
    if record is None:
        assert t[0] == -errno.EBADMSG and t[1] == 1
    elif record == "I":
        assert records == [] and t.instr == 1
    else:
        assert records == [record]


def test_parser_counts_lines_across_buffer_refills(tmp_path):
    """A bad line past the first 1 MiB read is reported with its true line number."""
    p = tmp_path / "big"
    good = " L 7ff0003a8,8\n" * 100_000  # 1.5 MB: the parser refills its buffer
    p.write_text(good + " L oops\n")
    records, (rc, lineno, _) = read_all(p, cap=4096)
    # the chunk holding the bad line is not returned; the ones before it are intact
    assert 90_000 < len(records) < 100_000 and records[-1] == (lib.PL_OP_LOAD, 0x7FF0003A8, 8)
    assert (rc, lineno) == (-errno.EBADMSG, 100_001)


def test_parser_rejects_a_line_longer_than_its_buffer(tmp_path):
    """A line longer than PL_TRACE_BUF is an error, not an endless loop."""
    p = tmp_path / "long"
    p.write_text(" L 10,1\n" + "x" * (lib.PL_TRACE_BUF + 10) + "\n")
    _, (rc, lineno, err) = read_all(p)
    assert (rc, lineno) == (-errno.EBADMSG, 2) and "longer" in err


def test_open_reports_errno(tmp_path):
    """A missing file is -ENOENT at open; a directory fails at the first read with -EISDIR."""
    out = ffi.new("struct pl_trace **")
    assert lib.pl_trace_open(str(tmp_path / "nope").encode(), out) == -errno.ENOENT
    _, (rc, _, _) = read_all(tmp_path)
    assert rc == -errno.EISDIR


def _config(size=1024, ways=2, line=64, policy=None, tlb=None, page=4096):
    c = ffi.new("struct pl_sim_config *")
    c.nlevels = 1
    c.level[0].size, c.level[0].ways, c.level[0].line = size, ways, line
    c.policy = lib.PL_POLICY_LRU if policy is None else policy
    if tlb:
        c.ntlbs = 1
        c.tlb[0].entries, c.tlb[0].ways = tlb
        c.tlb[0].name = b"DTLB"
    c.page_size = page
    return c


@pytest.mark.parametrize(
    "kw",
    [
        {"size": 1600},  # 25 lines in 2 ways: no whole number of sets
        {"line": 48},  # not a power of two
        {"ways": 0},
        {"size": 1000},  # not whole lines
        {"ways": 3, "policy": 3},  # PLRU needs power-of-two ways
        {"policy": 7},
        {"tlb": (6, 4)},
        {"line": 8192, "size": 16384, "tlb": (4, 4)},  # line larger than a page
        {"size": (lib.PL_SIM_MAX_LINES + 1) * 64, "ways": 1},
    ],
)
def test_c_rejects_impossible_configurations(kw):
    """pl_sim_config_check and pl_sim_create refuse what the model cannot run; the check says
    why in one line naming the level (a NULL buffer is allowed)."""
    c = _config(**kw)
    c.level[0].name = b"L1D"
    why = ffi.new("char[]", 256)
    assert lib.pl_sim_config_check(c, why, len(why)) == -errno.EINVAL
    text = ffi.string(why).decode()
    assert text and "\n" not in text and (text.startswith(("L1D: ", "DTLB")) or "policy" in text)
    assert lib.pl_sim_config_check(c, ffi.NULL, 0) == -errno.EINVAL
    assert lib.pl_sim_config_check(c, why, 8) == -errno.EINVAL and len(ffi.string(why)) == 7
    out = ffi.new("struct pl_sim **")
    assert lib.pl_sim_create(c, out) == -errno.EINVAL and out[0] == ffi.NULL


def test_c_outcomes_report_hits_and_evictions():
    """pl_sim_access_outcomes: miss, hit, miss with eviction, and M's second access (<< 2)."""
    c = _config(size=128, ways=1)  # 2 sets, 1 way
    out = ffi.new("struct pl_sim **")
    assert lib.pl_sim_create(c, out) == 0
    s = ffi.gc(out[0], lib.pl_sim_destroy)
    addr = np.array([0, 8, 128, 256], dtype=np.uint64)
    ops = np.array([0, 1, 0, 2], dtype=np.uint8)
    res = np.zeros(4, dtype=np.uint8)
    lib.pl_sim_access_outcomes(
        s,
        ffi.from_buffer("uint64_t[]", addr),
        ffi.from_buffer("uint8_t[]", ops),
        ffi.NULL,
        4,
        0,
        1,
        ffi.from_buffer("uint8_t[]", res),
    )
    hit, ev = lib.PL_SIM_HIT, lib.PL_SIM_EVICT
    assert res.tolist() == [0, hit, ev, ev | hit << 2]


def _tlbs(decode, *args):
    d, s = ffi.new("struct pl_cpuid_tlb *"), ffi.new("struct pl_cpuid_tlb *")
    rc = decode(*args, d, s)
    return rc, (d.entries, d.ways, d.leaf), (s.entries, s.ways, s.leaf)


def test_cpuid_decodes_amd_leaves():
    """AMD Zen 4 registers: 72-entry fully associative L1 DTLB, 3072-entry L2 (codes 6 and 5
    are 8 and 6 ways), for 4 KiB (EBX) and 2 MiB (EAX) pages."""
    r5 = [0xFF48FF40, 0xFF48FF40, 0x20080140, 0x20080140]
    r6 = [0x5C002200, 0x6C004200, 0x04006140, 0x0A009140]
    assert _tlbs(lib.pl_cpuid_decode_amd, 4096, r5, r6) == (
        3,
        (72, 72, 0x80000005),
        (3072, 8, 0x80000006),
    )
    assert _tlbs(lib.pl_cpuid_decode_amd, 2 << 20, r5, r6) == (
        3,
        (72, 72, 0x80000005),
        (3072, 6, 0x80000006),
    )
    assert _tlbs(lib.pl_cpuid_decode_amd, 8192, r5, r6)[0] == -errno.EINVAL


def _intel_subleaf(kind, level, pages, ways, sets, full=False):
    return [0, pages | ways << 16, sets, kind | level << 5 | full << 8]


def test_cpuid_decodes_intel_leaf_0x18():
    """Intel leaf 0x18: a 4-way 64-entry 4K DTLB, a 32-entry 2M DTLB, a 12-way 1536-entry
    unified STLB for both; instruction TLBs are ignored."""
    sub = [
        _intel_subleaf(2, 1, 1, 8, 16),  # instruction TLB
        _intel_subleaf(1, 1, 1, 4, 16),  # data, 4K
        _intel_subleaf(1, 1, 2, 4, 8),  # data, 2M
        _intel_subleaf(3, 2, 3, 12, 128),
    ]  # unified STLB, 4K + 2M
    sub[0][0] = 3  # subleaf 0 EAX: highest subleaf
    regs = [r for s in sub for r in s]
    assert _tlbs(lib.pl_cpuid_decode_intel, 4096, regs, 4) == (3, (64, 4, 0x18), (1536, 12, 0x18))
    assert _tlbs(lib.pl_cpuid_decode_intel, 2 << 20, regs, 4) == (
        3,
        (32, 4, 0x18),
        (1536, 12, 0x18),
    )


def test_cpuid_intel_hybrid_uses_the_load_only_dtlb_and_full_associativity():
    """Load-only L1 TLBs (type 4) stand in for a missing data TLB; bit 8 means one set."""
    regs = _intel_subleaf(4, 1, 1, 48, 1, full=True) + _intel_subleaf(5, 1, 1, 16, 1, True)
    rc, dtlb, stlb = _tlbs(lib.pl_cpuid_decode_intel, 4096, regs, 2)
    assert (rc, dtlb, stlb) == (1, (48, 48, 0x18), (0, 0, 0))


def test_cpuid_on_this_machine_answers():
    """The machine's CPUID reader runs here and, where it finds a TLB, reports entries and ways;
    a CPU (or hypervisor) that reports none is as valid an answer."""
    from pagelab.machine import cpuid

    for page in (4096, 2 << 20):
        for entries, ways, leaf in cpuid.tlbs(page).values():
            assert (entries, ways, leaf) == (0, 0, 0) or 1 <= ways <= entries


def test_a_described_cpuid_is_decoded_and_missing_leaves_read_as_zeros(tmp_path, monkeypatch):
    """A described machine's cpuid file feeds the same decoders: AMD's leaves where the vendor
    is AMD, Intel's leaf 0x18 where it is Intel, and a masked (absent) 0x18 means no TLB."""
    from pagelab.machine import cpuid

    (tmp_path / "sys").mkdir()
    monkeypatch.setenv("PAGELAB_MACHINE", str(tmp_path))
    amd = "0 0 10 68747541 444d4163 69746e65\n80000005 0 ff48ff40 ff48ff40 0 0\n"
    (tmp_path / "cpuid").write_text(amd + "80000006 0 0 52002200 0 0\n")
    assert cpuid.vendor() == "AuthenticAMD"
    assert cpuid.tlbs(4096)["dtlb"] == (72, 72, 0x80000005)
    (tmp_path / "cpuid").write_text("0 0 1f 756e6547 6c65746e 49656e69  # leaf 0x18 masked\n")
    cpuid._described_leaves.cache_clear()
    assert cpuid.vendor() == "GenuineIntel"
    assert cpuid.tlbs(4096) == {"dtlb": (0, 0, 0), "stlb": (0, 0, 0)}


def test_parser_reads_every_address_width_and_case(tmp_path):
    """Addresses of 1 to 16 hex digits (and zero-padded beyond), lower and upper case, with and
    without 0x, parse to their values: the word-at-a-time hex conversion is exact."""
    rng = random.Random(3)
    values = [0, 1, 2**64 - 1] + [rng.randrange(16 ** (k - 1), 16**k) for k in range(1, 17)]
    forms = [
        lambda v: f"{v:x}",
        lambda v: f"{v:X}",
        lambda v: f"0x{v:x}",
        lambda v: f"{v:020x}",  # 20 digits, the first 4 zeros
        lambda v: f"{v:08x}",  # lackey's own width
    ]
    p = tmp_path / "t"
    p.write_text("".join(f" L {form(v)},4\n" for v in values for form in forms))
    records, t = read_all(p, cap=64)
    assert [a for _, a, _ in records] == [v for v in values for _ in forms]
    assert t.loads == len(values) * len(forms)
