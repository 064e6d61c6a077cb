#!/usr/bin/python3
"""Medians of bench results (name, round, seconds, peak RSS KiB) as a Markdown table."""
import glob
import json
import statistics
import sys

rows = [line.split('\t') for line in open(sys.argv[1]) if line.strip()]
out = sys.argv[2]
by = {}
for name, _round, seconds, rss in rows:
    by.setdefault(name, []).append((float(seconds), int(rss) / 1024))
base = statistics.median(s for s, _ in by['hyperstream_10'])
print('| run | n | median s | min-max s | peak RSS MiB | ÷ hyperstream_10 |')
print('|---|---|---|---|---|---|')
for name, values in by.items():
    secs = [s for s, _ in values]
    med = statistics.median(secs)
    print(f'| {name} | {len(secs)} | {med:.2f} | {min(secs):.2f}-{max(secs):.2f} | '
          f'{max(r for _, r in values):.0f} | {med / base:.2f} |')
for pattern in ('hs10_*.json', 'hs10r_*.json'):
    files = sorted(glob.glob(f'{out}/{pattern}'))
    if not files:
        continue
    stages = {}
    for f in files:
        for k, v in json.load(open(f))['seconds'].items():
            stages.setdefault(k, []).append(v)
    print(f'\nstage seconds ({pattern}, medians; read/moments/projection/write overlap): ' +
          ', '.join(f'{k} {statistics.median(v):.2f}' for k, v in stages.items()))
