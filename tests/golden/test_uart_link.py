"""golden.regs.uart_link: the UARTBone framing (LiteX's comm_uart byte layout), the address map, the feeder order."""

import numpy as np
import pytest

from pezo.golden.regs import uart_link as ul


def test_frames_have_litex_uartbone_layout():
    # cmd, length, word address big endian, words big endian (LiteX tools/remote/comm_uart.py)
    assert ul.encode_write(0x1000_0008, [0x11223344]) == bytes.fromhex("01 01 04000002 11223344")
    assert ul.encode_read(0x14, 2) == bytes.fromhex("02 02 00000005")
    assert ul.encode_read(0x14, 1, fixed=True)[0] == ul.CMD_READ_FIXED
    assert ul.decode_answer(bytes.fromhex("0000000a ffffffff"), 2) == [10, 0xFFFFFFFF]


def test_decode_frame_inverts_encode_and_drops_junk():
    frame = ul.encode_write(0x3000_0010, [1, 2, 3])
    assert ul.decode_frame(b"\x00\xff" + frame + b"tail") == (ul.CMD_WRITE, 0x3000_0010, [1, 2, 3], b"tail")
    with pytest.raises(ValueError, match="incomplete write frame"):
        ul.decode_frame(frame[:-1])


@pytest.mark.parametrize(
    "call,needle",
    [
        (lambda: ul.encode_read(2, 1), "4-byte aligned"),
        (lambda: ul.encode_read(0, 256), "length must be in 1..255"),
        (lambda: ul.encode_write(0, [1 << 32]), "32-bit"),
        (lambda: ul.region_base("dram"), "region must be one of"),
        (lambda: ul.feed_indices(5, 5, 2, 1), "start must be in 0..4"),
    ],
)
def test_bad_input_is_one_clear_error(call, needle):
    with pytest.raises(ValueError, match=needle):
        call()


def test_bus_bytes_are_little_endian_words():
    assert ul.bytes_to_words(b"\x01\x02\x03\x04\x05") == [0x04030201, 0x05]
    assert ul.words_to_bytes([0x04030201]) == b"\x01\x02\x03\x04"


def test_feed_order_reads_the_memory_in_order_and_wraps():
    got = ul.feed_indices(start=3, examples=5, batch=2, batches=4)
    assert got.tolist() == [[3, 4], [0, 1], [2, 3], [4, 0]]
    assert ul.feed_indices(0, 1797, 16, 200)[-1, -1] == (200 * 16 - 1) % 1797


def test_feeder_registers_sit_in_their_region():
    assert ul.feeder_register("FEED_CONTROL") == (2 << 28) + 0x10
    assert len({r.offset for r in ul.feeder_registers()}) == len(ul.feeder_registers())
    assert np.isclose(ul.link_seconds(11520, 115200), 1.0)


def test_the_link_budget_of_a_digits_batch():
    rows = ul.link_budget(64, 16, 2191, 25e6, (115_200, 3_000_000))
    assert rows[0]["batch_bytes"] == 2 * 6 + 16 * 64 + (6 + 8 * 16) + 10
    assert 1000 < rows[0]["link_per_compute"] < 1300 and 40 < rows[1]["link_per_compute"] < 50
    assert rows[0]["host_fed_steps_per_second"] < 10 < 11_000 < rows[0]["on_chip_steps_per_second"]
