/**
 * The Python run in every fresh MicroPython interpreter before its program: the `tools`
 * namespaces, `ToolCallError`, JSON checks, the import allowlist and the thread's entry points.
 *
 * @module
 */
import { MAX_CALL_ARG_NODES } from '../../src/code-runtime/limits.js'
import { MAX_VM_MESSAGE_CHARS } from '../../src/code-runtime/sandbox-protocol.js'
import { MAX_ERROR_TEXT } from '../../src/code-runtime/wire.js'

/** Modules a program may import (each exists in the published MicroPython build). */
export const PYTHON_ALLOWED_MODULES: readonly string[] = [
  'asyncio', 'json', 'math', 'cmath', 're', 'random', 'time', 'collections', 'functools', 'itertools', 'heapq',
  'string', 'struct', 'binascii', 'base64', 'hashlib', 'hmac', 'copy', 'datetime', 'operator', 'abc', 'fnmatch', 'array', 'errno', 'typing',
]

/**
 * What the program can reach: every function it can get hold of (`tools.x`, `print`,
 * `__import__`, …) is defined here, so their `__globals__` hold only this (no `sys`, no
 * `builtins`). `_post` (a JS function the thread registers) sends one JSON message to the host.
 */
const PYTHON_PUBLIC_SOURCE = `_MAX_MESSAGE = ${MAX_VM_MESSAGE_CHARS}\n_MAX_NODES = ${MAX_CALL_ARG_NODES}\n_MAX_ERROR_TEXT = ${MAX_ERROR_TEXT}\n` + String.raw`_ALLOWED = {}
class _Stderr:
    def write(self, s):
        if type(s) is str:
            _emit(s[:-1] if s.endswith('\n') else s, 'error')
class _SysStub:
    stderr = _Stderr()
    def print_exception(self, e, f=None):
        _emit(_trace(e), 'error')

class _Any:
    def __getitem__(self, k):
        return self
    def __call__(self, *a, **k):
        return self
_any = _Any()
class _Typing:
    def __getattr__(self, name):
        if name == 'TYPE_CHECKING':
            return False
        return _any
_typing = _Typing()


def _guard(name, globals=None, locals=None, fromlist=(), level=0):
    if level == 0 and name in _ALLOWED:
        return _ALLOWED[name]
    raise ImportError("no module named '" + str(name) + "' in this sandbox: the allowed modules are " + ', '.join(sorted(_ALLOWED)))
def _refused(*a, **k):
    raise OSError('no files in this sandbox: pass data through tool calls')
def _no_input(*a, **k):
    raise OSError('no stdin in this sandbox')

_out = []
_CHUNK = 4096
def _jstr(s):
    # MicroPython's json.dumps grows its buffer 16 bytes at a time (quadratic): long text goes in 4 KiB pieces.
    if len(s) <= _CHUNK:
        return json.dumps(s)
    b = s.encode()
    parts = ['"']
    i = 0
    n = len(b)
    while i < n:
        j = min(n, i + _CHUNK)
        while j < n and b[j] & 0xC0 == 0x80:
            j -= 1
        parts.append(json.dumps(b[i:j].decode())[1:-1])
        i = j
    parts.append('"')
    return ''.join(parts)
def _emit(text, level):
    room = _state['maxLogBytes'] - _state['logBytes']
    if room < 0:
        return
    # A line beyond the cap is cut here (the host keeps at most the cap): only what it keeps crosses.
    if len(text) > room + 1:
        text = text[:room + 1]
    _state['logBytes'] += len(text) + 1
    _post('{"type":"log","source":"console","level":"' + level + '","text":' + _jstr(text) + '}')
def _print(*args, sep=' ', end='\n', file=None, flush=False):
    if _state['logBytes'] > _state['maxLogBytes']:
        return
    _out.append(sep.join([str(a) for a in args]) + end)
    if '\n' not in end and len(_out) < 64:
        return
    text = ''.join(_out)
    _out.clear()
    lines = text.split('\n')
    if lines[-1]:
        _out.append(lines[-1])
    for line in lines[:-1]:
        _emit(line, 'log')
def _flush():
    if _out:
        text = ''.join(_out)
        _out.clear()
        for line in text.split('\n'):
            _emit(line, 'log')

_MAXI = 9007199254740991
_INF = float('inf')
_END = object()

def _scalar(v, t, what):
    if v is None:
        return 'null'
    if t is bool:
        return 'true' if v else 'false'
    if t is str:
        return _jstr(v)
    if t is int:
        if v > _MAXI or v < -_MAXI:
            raise ValueError(what + ' holds the integer ' + str(v) + ', beyond 2**53 - 1: JSON numbers would round it; pass it as a string')
        return str(v)
    if t is float:
        if v != v or v == _INF or v == -_INF:
            raise ValueError(what + ' holds ' + repr(v) + ', which JSON cannot carry')
        return json.dumps(v)
    raise TypeError(what + ' holds a ' + t.__name__ + ', which JSON cannot carry')

def _encode(value, what, limit, maxnodes, sep, colon):
    """JSON text of value, checked (lossless, depth, values), in one linear pass that stops
    once the text passes limit characters: returns (text, whether it stopped)."""
    out = []
    size = 0
    nodes = 0
    stack = []
    v = value
    while True:
        nodes += 1
        if nodes > maxnodes:
            raise ValueError(what + ': they hold more than ' + str(maxnodes) + ' JSON values (object keys count); send fewer values per call, or data as one string')
        t = type(v)
        if t is list or t is tuple or t is dict:
            if len(stack) >= 100:
                raise ValueError(what + ' nests deeper than 100 levels; flatten them')
            if t is dict:
                out.append('{')
                stack.append([iter(v), '}', v, True])
            else:
                out.append('[')
                stack.append([iter(v), ']', None, True])
            size += 1
        else:
            piece = _scalar(v, t, what)
            out.append(piece)
            size += len(piece)
        while stack:
            f = stack[-1]
            nxt = next(f[0], _END)
            if nxt is _END:
                out.append(f[1])
                size += 1
                stack.pop()
                continue
            if not f[3]:
                out.append(sep)
                size += len(sep)
            f[3] = False
            if f[2] is not None:
                if type(nxt) is not str:
                    raise TypeError(what + ' has a dict key ' + repr(nxt) + ': JSON keys are str')
                nodes += 1
                key = _jstr(nxt)
                out.append(key)
                out.append(colon)
                size += len(key) + len(colon)
                v = f[2][nxt]
            else:
                v = nxt
            break
        else:
            return ''.join(out), size > limit
        if size > limit:
            return ''.join(out), True

class ToolCallError(Exception):
    """A failed tool call: tool_name names the tool, code says why, str(error) is the message."""
    def __init__(self, message, tool_name=None, code=None):
        super().__init__(message)
        self.message = message
        self.tool_name = tool_name
        self.code = code
    def __str__(self):
        return self.message

class _Wait:
    def __init__(self):
        self.event = asyncio.Event()
        self.ok = False
        self.value = None
        self.error = None

_pending = {}
_state = {'next': 0, 'maxValueBytes': 32768, 'maxLogBytes': 65536, 'logBytes': 0}
_MISSING = object()

async def _call(glob, name, args):
    what = glob + '.' + name
    i = _state['next'] + 1
    text = '{"type":"call","id":' + str(i) + ',"global":' + _jstr(glob) + ',"name":' + _jstr(name)
    if args is not _MISSING:
        body, over = _encode(args, 'the arguments of ' + what, _MAX_MESSAGE, _MAX_NODES, ',', ':')
        if over:
            raise ValueError(what + ': the arguments take more than ' + str(_MAX_MESSAGE // 1048576) + ' MiB of JSON; at most ' + str(_MAX_MESSAGE // 1048576) + ' MiB go to the host in one call')
        text += ',"args":' + body
    refused = _post(text + '}')
    if refused:
        raise ValueError(what + ': ' + refused)
    _state['next'] = i
    w = _Wait()
    _pending[i] = w
    await w.event.wait()
    if w.ok:
        return w.value
    raise w.error

class _Namespace:
    def __init__(self, glob, variadic):
        self._glob = glob
        self._variadic = variadic
    def _fn(self, name):
        glob = self._glob
        if self._variadic:
            def call(*args, **kwargs):
                args = list(args)
                if kwargs:
                    args.append(kwargs)
                return _call(glob, name, args)
        else:
            def call(args=_MISSING):
                return _call(glob, name, args)
        return call
    def __getattr__(self, name):
        if name.startswith('__'):
            raise AttributeError(name)
        return self._fn(name)
    def __getitem__(self, name):
        if type(name) is not str:
            raise TypeError('a tool name is a str')
        return self._fn(name)

def _deliver(text):
    m = json.loads(text)
    if m.get('type') != 'reply':
        return
    w = _pending.pop(m.get('id'), None)
    if w is None:
        return
    if m.get('ok'):
        w.ok = True
        w.value = m.get('value')
    else:
        w.error = ToolCallError(m.get('message', ''), m.get('toolName'), m.get('code'))
    w.event.set()

def _trace(e):
    buf = _StringIO()
    _print_exception(e, buf)
    out = []
    for line in buf.getvalue().split('\n'):
        if line.startswith('  File "program.py", line '):
            rest = line[len('  File "program.py", line '):]
            digits = ''
            while rest and rest[0] in '0123456789':
                digits += rest[0]
                rest = rest[1:]
            if digits:
                # The wrapper is the program's top level, named as Python names one.
                if rest == ', in __program__':
                    rest = ', in <module>'
                line = '  File "program.py", line ' + str(max(1, int(digits) - 1)) + rest
        elif line.startswith('  File "<prelude>"'):
            continue
        out.append(line)
    return '\n'.join(out).rstrip('\n')

def _cut(s):
    return s[:_MAX_ERROR_TEXT] + '\u2026' if len(s) > _MAX_ERROR_TEXT else s
def _fail(e):
    # Whatever the exception does (a __str__ that raises, a huge message), the run settles.
    try:
        name = _cut(type(e).__name__)
        message = _cut(str(e))
        stack = _trace(e) if len(message) < _MAX_ERROR_TEXT else name + ': ' + message
        _post('{"type":"done","error":{"name":' + _jstr(name) + ',"message":' + _jstr(message) + ',"stack":' + _jstr(_cut(stack)) + '}}')
    except BaseException:
        # A heap full of garbage (collected only once the interpreter returns to the host) allocates nothing: constant text.
        if isinstance(e, MemoryError):
            _post('{"type":"done","error":{"name":"MemoryError","message":"memory allocation failed: the heap is full (MicroPython collects garbage only when the program awaits the host)"}}')
        else:
            _post('{"type":"done","error":{"name":"Exception","message":"the program raised an exception that cannot be shown"}}')

async def _main(program):
    try:
        value = await program()
    except BaseException as e:
        _flush()
        _fail(e)
        return
    _flush()
    if value is None:
        _post('{"type":"done"}')
        return
    limit = _state['maxValueBytes']
    try:
        text, over = _encode(value, 'the returned value', limit, _MAX_NODES * 100, ', ', ': ')
    except BaseException as e:
        _fail(e)
        return
    if over or len(text) > limit:
        # A rendering, cut (the host marks it): a value this large is never serialized whole.
        _post('{"type":"done","value":' + _jstr(text[:limit]) + ',"rendered":true,"oversized":true}')
    else:
        _post('{"type":"done","value":' + text + '}')

def _start(text):
    m = json.loads(text)
    _state['maxValueBytes'] = m.get('maxValueBytes', 32768)
    _state['maxLogBytes'] = m.get('maxLogBytes', 65536)
    g = {'__name__': '__main__', 'ToolCallError': ToolCallError, 'asyncio': asyncio, 'json': json}
    for ns in m['namespaces']:
        g[ns['global']] = _Namespace(ns['global'], bool(ns.get('variadic')))
    src = m['program']
    # random was seeded when the prelude imported it, outside any run: the run's own seed is a reading its journal keeps.
    _reseed()
    try:
        code = compile(src, 'program.py', 'exec')
        exec(code, g)
    except BaseException as e:
        _fail(e)
        return
    asyncio.create_task(_main(g.pop('__program__')))

`

/**
 * The prelude run in `__main__`: imports what the allowlist names (before the guard is
 * installed, so their own imports work), runs the public part in its own globals, then
 * hides everything else (`jsffi`, `sys`, `builtins`) from the program: the allowlist is
 * enforced by `builtins.__import__`, which every `import` statement consults.
 */
export const PYTHON_PRELUDE = `_PUBLIC = ${JSON.stringify(PYTHON_PUBLIC_SOURCE)}\n` + String.raw`
import asyncio, json, sys, io, builtins
import _tyhost
for _m in ('gather', 'Event', 'Lock', 'wait_for'):
    getattr(asyncio, _m)
import math, cmath, re, random, time, collections, functools, itertools, heapq, string, struct, binascii, base64, hashlib, hmac, copy, datetime, operator, abc, fnmatch, array, errno
_pub = {'__name__': '_toolyard', '_post': _tyhost.post, 'json': json, 'asyncio': asyncio, '_StringIO': io.StringIO, '_print_exception': sys.print_exception, '_reseed': random.seed}
exec(_PUBLIC, _pub)
_ALLOWED = _pub['_ALLOWED']
for _name in (__ALLOWED__):
    _ALLOWED[_name] = _pub['_typing'] if _name == 'typing' else sys.modules.get(_name) or __import__(_name)
_mods = [_ALLOWED[_n] for _n in _ALLOWED if _n != 'typing']
_seen = []
_modtype = type(json)
while _mods:
    _m = _mods.pop()
    if _m in _seen:
        continue
    _seen.append(_m)
    for _k in dir(_m):
        _v = getattr(_m, _k, None)
        if type(_v) is not _modtype:
            continue
        _vn = _v.__name__
        if _vn in _ALLOWED or _vn.startswith('asyncio.'):
            _mods.append(_v)
        elif not (_m is asyncio.core and _vn == 'js'):
            try:
                setattr(_m, _k, None)
            except Exception:
                raise ImportError('cannot hide ' + _vn + ' in ' + _m.__name__)
asyncio.core.sys = _pub['_SysStub']()
for _k in ('jsffi', 'js', '_tyhost'):
    try:
        del sys.modules[_k]
    except KeyError:
        pass
builtins.__import__ = _pub['_guard']
builtins.open = _pub['_refused']
builtins.input = _pub['_no_input']
builtins.print = _pub['_print']
_ty_start = _pub['_start']
_ty_deliver = _pub['_deliver']
del _pub, _ALLOWED, _tyhost, _k, _m, _name, _mods, _seen, _v, _vn
`.replace('__ALLOWED__', PYTHON_ALLOWED_MODULES.map((name) => `'${name}'`).join(', ') + ',')
