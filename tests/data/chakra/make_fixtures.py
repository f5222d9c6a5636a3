#!/usr/bin/env python3
"""Encodes the text-format Chakra traces beside this script into .et files.

Each NAME.txtpb holds one GlobalMetadata and then Node messages in protobuf text format,
each message after a line "=== GlobalMetadata" or "=== Node". RANK in the text becomes the
rank; one NAME.<rank>.et is written per rank in the "# ranks:" header line. protoc (Debian
protobuf-compiler) encodes each message with perfsim's copy of Chakra's schema; the framing
is Chakra's: a varint32 length before every message.

    python3 tests/data/chakra/make_fixtures.py      (from the repository root)
"""
import pathlib
import subprocess

HERE = pathlib.Path(__file__).resolve().parent
SCHEMA_DIR = HERE.parents[2] / "src" / "trace_io" / "chakra"


def varint32(length: int) -> bytes:
    out = bytearray()
    while length >= 0x80:
        out.append((length & 0x7F) | 0x80)
        length >>= 7
    out.append(length)
    return bytes(out)


def encode(message_type: str, text: str) -> bytes:
    return subprocess.run(
        ["protoc", f"--encode=ChakraProtoMsg.{message_type}", "-I", str(SCHEMA_DIR), "et_def.proto"],
        input=text.encode(), stdout=subprocess.PIPE, check=True).stdout


def messages(text: str):
    kind, lines = None, []
    for line in text.splitlines():
        if line.startswith("=== "):
            if kind:
                yield kind, "\n".join(lines)
            kind, lines = line[4:].strip(), []
        elif kind:
            lines.append(line)
    if kind:
        yield kind, "\n".join(lines)


for source in sorted(HERE.glob("*.txtpb")):
    text = source.read_text()
    ranks = next(line.split(":", 1)[1].split() for line in text.splitlines()
                 if line.startswith("# ranks:"))
    for rank in ranks:
        framed = b"".join(varint32(len(body)) + body
                          for kind, body in ((k, encode(k, t.replace("RANK", rank)))
                                             for k, t in messages(text)))
        (HERE / f"{source.stem}.{rank}.et").write_bytes(framed)
        print(f"{source.stem}.{rank}.et: {len(framed)} bytes")
