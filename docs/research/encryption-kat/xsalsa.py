import struct
from cryptography.hazmat.primitives.poly1305 import Poly1305
M=0xffffffff
def rotl(v,c): return ((v<<c)&M)|(v>>(32-c))
def qr(x,a,b,c,d):
    x[b]^=rotl((x[a]+x[d])&M,7); x[c]^=rotl((x[b]+x[a])&M,9)
    x[d]^=rotl((x[c]+x[b])&M,13); x[a]^=rotl((x[d]+x[c])&M,18)
def rounds(x):
    for _ in range(10):
        qr(x,0,4,8,12);qr(x,5,9,13,1);qr(x,10,14,2,6);qr(x,15,3,7,11)
        qr(x,0,1,2,3);qr(x,5,6,7,4);qr(x,10,11,8,9);qr(x,15,12,13,14)
C=struct.unpack('<4I',b'expand 32-byte k')
def state(key,n16):
    k=struct.unpack('<8I',key); n=struct.unpack('<4I',n16)
    return [C[0],k[0],k[1],k[2],k[3],C[1],n[0],n[1],n[2],n[3],C[2],k[4],k[5],k[6],k[7],C[3]]
def hsalsa(key,n16):
    x=state(key,n16); rounds(x)
    return struct.pack('<8I',*[x[i] for i in (0,5,10,15,6,7,8,9)])
def salsa_stream(key,n8,length):
    out=b'';ctr=0
    while len(out)<length:
        s=state(key,n8+struct.pack('<Q',ctr)); x=list(s); rounds(x)
        out+=struct.pack('<16I',*[(x[i]+s[i])&M for i in range(16)]); ctr+=1
    return out[:length]
def seal(msg,nonce,key):
    sub=hsalsa(key,nonce[:16]); ks=salsa_stream(sub,nonce[16:],32+len(msg))
    ct=bytes(a^b for a,b in zip(msg,ks[32:]))
    tag=Poly1305.generate_tag(ks[:32],ct)
    return tag+ct
def open_(box,nonce,key):
    sub=hsalsa(key,nonce[:16]); ks=salsa_stream(sub,nonce[16:],32+len(box)-16)
    Poly1305.verify_tag(ks[:32],box[16:],box[:16])
    return bytes(a^b for a,b in zip(box[16:],ks[32:]))
