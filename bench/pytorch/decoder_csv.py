# The decoder steps of bench/pytorch/decoder_steps.py's JSON lines as one CSV (tests/data/h200-pytorch/README.md):
# a row per configuration, from the last call that measured it. Memory only from runs that started on an empty
# allocator (allocated_before_bytes under 100 MB): the first call's runs leaked into each other (README).
# Usage: python3 bench/pytorch/decoder_csv.py GPU FILE.jsonl... > decoder-steps.csv
import json, sys

KEY = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "seq", "batch", "mode", "ac", "precision", "sdpa",
       "optimizer", "compile")
gpu, rows = sys.argv[1], {}
for path in sys.argv[2:]:
    for line in open(path):
        r = json.loads(line)
        if "ms_per_iter" not in r: continue
        if r["compile"] and r.get("compile_loss") is False:
            r["compile"] = "blocks"  # the blocks compiled, the loss eager
        clean = r.get("allocated_before_bytes", 1 << 40) < 100e6
        old = rows.get(tuple(r[k] for k in KEY))
        r["file"] = path.rsplit("/", 1)[-1]
        if old and old["clean"] and not clean:  # keep the clean memory, take the later time
            r["peak_allocated_bytes"], r["peak_reserved_bytes"], clean = old["peak_allocated_bytes"], old["peak_reserved_bytes"], True
        r["clean"] = clean
        rows[tuple(r[k] for k in KEY)] = r
print("gpu,layers,hidden,heads,kv_heads,ffn,vocab,seq,batch,mode,checkpointing,precision,attention,optimizer,compile,"
      "ms_per_iter,tokens_per_s,peak_allocated_bytes,peak_reserved_bytes,file")
for r in rows.values():
    mem = f'{r["peak_allocated_bytes"]},{r["peak_reserved_bytes"]}' if r["clean"] else ","
    print(gpu + "," + ",".join(str(r[k]).lower() for k in KEY[:-1]) + f',{str(r["compile"]).lower()},{r["ms_per_iter"]},'
          f'{r["tokens_per_s"]},{mem},{r["file"]}')
