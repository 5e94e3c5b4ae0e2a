import re
def parse_go_string(src):
    """src: Go interpreted string literal contents (without quotes) as a Python str (source text). returns bytes"""
    out = bytearray(); i = 0
    simple = {'a':7,'b':8,'f':12,'n':10,'r':13,'t':9,'v':11,'\\':92,'"':34,"'":39}
    while i < len(src):
        c = src[i]
        if c != '\\':
            out += c.encode('utf-8'); i += 1; continue
        n = src[i+1]
        if n in simple: out.append(simple[n]); i += 2
        elif n == 'x': out.append(int(src[i+2:i+4],16)); i += 4
        elif n == 'u': out += chr(int(src[i+2:i+6],16)).encode('utf-8'); i += 6
        elif n == 'U': out += chr(int(src[i+2:i+10],16)).encode('utf-8'); i += 10
        elif n in '01234567': out.append(int(src[i+1:i+4],8)); i += 4
        else: raise ValueError(n)
    return bytes(out)
