import csv, gzip, statistics as st, collections, sys
rows=[]
with gzip.open(sys.argv[1],'rt') as fh:
    r=csv.reader(fh); next(r)
    for x in r: rows.append(tuple(int(v) for v in x))
# columns: t_start,t_wait,t_end,tag,block,smid,flags,t_keys,t_slice,t_reduce
by=collections.defaultdict(list)
for r in rows: by[r[3]].append(r)
L=[]
for tag,rs in by.items():
    rs.sort(key=lambda r:r[0]); ts=[r[0] for r in rs]
    g,i=max((ts[k+1]-ts[k],k) for k in range(len(ts)-1))
    L += [rs[:i+1], rs[i+1:]]
L.sort(key=lambda rs: min(r[0] for r in rs))
q=lambda v,p: sorted(v)[int(p*(len(v)-1))]
segs={'early':collections.defaultdict(list),'late':collections.defaultdict(list)}
for launch in L[38:70]:
    for r in launch:
        if r[6]&4: continue
        kind='early' if r[6]&1 else 'late'
        t_start,t_wait,t_end,_,_,_,fl,tk,ts_,tr=r
        d=segs[kind]
        d['wait->keys barrier']. append((tk-t_wait)/1e3)
        d['keys->slice pass done'].append((ts_-tk)/1e3)
        d['slice->reduce done'].append((tr-ts_)/1e3)
        d['reduce->end'+(' (flush)' if fl&2 else '')].append((t_end-tr)/1e3)
        d['total wait->end'].append((t_end-t_wait)/1e3)
print(sys.argv[1], 'segment durations of blocks, us (thread 0), launches 38..69')
for kind in ('early','late'):
    print(kind, 'blocks: n', len(segs[kind]['total wait->end']))
    for k,v in segs[kind].items():
        print('   %-24s p10 %5.2f  p50 %5.2f  p90 %5.2f  (n %d)'%(k,q(v,.1),q(v,.5),q(v,.9),len(v)))
