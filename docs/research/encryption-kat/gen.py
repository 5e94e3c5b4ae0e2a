import base64,struct
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand
from cryptography.hazmat.primitives import hashes
from xsalsa import seal, open_
AAD=b'/registry/secrets/default/s1'
P=b'pandas are the best'
def b64(b): return base64.b64encode(b).decode()
def cbc(key,iv,p):
    pad=16-len(p)%16; p=p+bytes([pad])*pad
    e=Cipher(algorithms.AES(key),modes.CBC(iv)).encryptor(); return iv+e.update(p)+e.finalize()
out=[]
k32=bytes(range(32)); iv=bytes(range(0xa0,0xb0))
for name,key,p in [('cbc32',k32,P),('cbc32-fullblock',k32,b'0123456789abcdef'),('cbc16',k32[:16],P)]:
    v=b'k8s:enc:aescbc:v1:key1:'+cbc(key,iv,p)
    out.append(f'{name}: secret={b64(key)} iv={iv.hex()} pt={p!r}\n  value_hex={v.hex()}')
nonce=bytes(range(0xb0,0xbc))
for n in (16,24,32):
    key=k32[:n]; v=b'k8s:enc:aesgcm:v1:key1:'+nonce+AESGCM(key).encrypt(nonce,P,AAD)
    assert AESGCM(key).decrypt(nonce,v[len(b'k8s:enc:aesgcm:v1:key1:')+12:],AAD)==P
    out.append(f'aesgcm{n}: secret={b64(key)} nonce={nonce.hex()} aad={AAD.decode()} pt={P!r}\n  value_hex={v.hex()}')
sn=bytes(range(0xc0,0xd8))
box=seal(P,sn,k32); assert open_(box,sn,k32)==P
v=b'k8s:enc:secretbox:v1:key1:'+sn+box
out.append(f'secretbox: secret={b64(k32)} nonce={sn.hex()} pt={P!r} (no AAD)\n  value_hex={v.hex()}')
# kms v2 seed
def vi(n):
    o=b''
    while True:
        b=n&0x7f; n>>=7
        if n: o+=bytes([b|0x80])
        else: return o+bytes([b])
def fld(num,wt,payload):
    if wt==2: return vi(num<<3|2)+vi(len(payload))+payload
    return vi(num<<3|0)+vi(payload)
seed=bytes(range(0x40,0x60)); info=bytes(range(0x60,0x80)); gn=bytes(range(0x80,0x8c))
dk=HKDFExpand(hashes.SHA256(),32,info).derive(seed)
ed=info+gn+AESGCM(dk).encrypt(gn,P,AAD)
src=b64(seed).encode()
obj=fld(1,2,ed)+fld(2,2,b'1')+fld(3,2,src)+fld(5,0,1)
v=b'k8s:enc:kms:v2:kms-provider:'+obj
out.append(f'kmsv2-seed: seed={seed.hex()} (KMS plaintext; mock ciphertext=base64(seed)={src.decode()}) info={info.hex()} derivedKey={dk.hex()} nonce={gn.hex()} keyID=1 aad={AAD.decode()} pt={P!r}\n  value_hex={v.hex()}')
dek=seed; cn=bytes.fromhex('deadbeef')+struct.pack('<Q',1_000_000_001)
ed=cn+AESGCM(dek).encrypt(cn,P,AAD)
obj=fld(1,2,ed)+fld(2,2,b'1')+fld(3,2,src)
v=b'k8s:enc:kms:v2:kms-provider:'+obj
out.append(f'kmsv2-aesgcmkey (type 0, read-only): dek={dek.hex()} nonce={cn.hex()} keyID=1 aad={AAD.decode()} pt={P!r}\n  value_hex={v.hex()}')
print('\n'.join(out))
