import csv, gzip, statistics as st, collections, sys
def load(f):
    rows=[]
    with gzip.open(f,'rt') as fh:
        r=csv.reader(fh); next(r)
        for x in r: rows.append(tuple(int(v) for v in x))
    return rows
def launches_of(rows):
    by=collections.defaultdict(list)
    for r in rows: by[r[3]].append(r)
    out=[]
    for tag,rs in by.items():
        rs.sort(key=lambda r:r[0]); ts=[r[0] for r in rs]
        g,i=max((ts[k+1]-ts[k],k) for k in range(len(ts)-1))
        out += [rs[:i+1], rs[i+1:]]
    out.sort(key=lambda rs: min(r[0] for r in rs))
    return out
f=sys.argv[1]
L=launches_of(load(f))
# boundary profile: for launches k in 38..70, align at prev last end (T=0); count resident blocks of prev and cur in bins
bins=collections.defaultdict(lambda:[0,0,0]); nb=0
for k in range(38,70):
    prev,cur=L[k-1],L[k]
    T=max(r[2] for r in prev)
    nb+=1
    for which,launch in ((0,prev),(1,cur)):
        for r in launch:
            for b in range(int((r[0]-T)//500), int((r[2]-T)//500)+1):
                if -30<=b<=30: bins[b][which]+=1
    for r in cur:  # released (past wait) blocks of cur
        for b in range(int((max(r[1],r[0])-T)//500), int((r[2]-T)//500)+1):
            if -30<=b<=30: bins[b][2]+=1
print(f, 'resident blocks around the boundary (T=0: last block of the previous launch ends), per 0.5 us bin, mean over', nb)
for b in range(-24,25,2):
    p,c,cr=bins[b]
    print('%6.1f us  prev %6.0f  cur %6.0f (past wait %6.0f)  total %6.0f'%(b*0.5, p/nb, c/nb, cr/nb, (p+c)/nb))
# whole-launch resident average
occ=[]
for k in range(38,70):
    l=L[k]; s=min(r[0] for r in l); e=max(r[2] for r in l)
    occ.append(sum(r[2]-r[0] for r in l)/(e-s))
print('mean resident blocks over a launch span: %.0f'%st.mean(occ))
# early blocks: end - wait percentiles; also wait - start (time they sat), and the second wave's start - T
ew=[];sat=[];sw=[];
for k in range(38,70):
    prev,cur=L[k-1],L[k]
    T=max(r[2] for r in prev)
    for r in cur:
        if r[6]&1:
            ew.append((r[2]-r[1])/1e3); sat.append((r[1]-r[0])/1e3)
    starts=sorted((r[0]-T)/1e3 for r in cur if not r[6]&1)
    if starts: sw.append(starts[0])
q=lambda v,p: sorted(v)[int(p*(len(v)-1))]
if ew:
    print('early blocks: end-wait p10 %.2f p50 %.2f p90 %.2f max %.2f; waited p50 %.2f'%(q(ew,.1),q(ew,.5),q(ew,.9),max(ew),q(sat,.5)))
    print('first non-early block starts at T + %.2f us (median over boundaries)'%st.median(sw))
