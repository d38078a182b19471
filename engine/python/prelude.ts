/**
 * The Python run in every fresh MicroPython interpreter before its program: the `tools`
 * namespaces, `ToolCallError`, JSON checks, the import allowlist and the thread's entry points.
 *
 * @module
 */

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
const PYTHON_PUBLIC_SOURCE = String.raw`_ALLOWED = {}
class _Stderr:
    def write(self, s):
        _post(json.dumps({'type': 'log', 'source': 'console', 'level': 'error', 'text': s}))
class _SysStub:
    stderr = _Stderr()
    def print_exception(self, e, f=None):
        _post(json.dumps({'type': 'log', 'source': 'console', 'level': 'error', 'text': _trace(e)}))

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
def _emit(text, level):
    if _state['logBytes'] > _state['maxLogBytes']:
        return
    _state['logBytes'] += len(text) + 1
    _post(json.dumps({'type': 'log', 'source': 'console', 'level': level, 'text': text}))
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

def _check(value, what):
    stack = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if depth > 100:
            raise ValueError(what + ' nests deeper than 100 levels')
        t = type(v)
        if v is None or t is bool or t is str:
            continue
        if t is int:
            if v > _MAXI or v < -_MAXI:
                raise ValueError(what + ' holds the integer ' + str(v) + ', beyond 2**53 - 1: JSON numbers would round it; pass it as a string')
            continue
        if t is float:
            if v != v or v == _INF or v == -_INF:
                raise ValueError(what + ' holds ' + repr(v) + ', which JSON cannot carry')
            continue
        if t is list or t is tuple:
            for x in v:
                stack.append((x, depth + 1))
            continue
        if t is dict:
            for k in v:
                if type(k) is not str:
                    raise TypeError(what + ' has a dict key ' + repr(k) + ': JSON keys are str')
                stack.append((v[k], depth + 1))
            continue
        raise TypeError(what + ' holds a ' + t.__name__ + ', which JSON cannot carry')

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
    if args is not _MISSING:
        _check(args, 'the arguments of ' + glob + '.' + name)
    _state['next'] += 1
    i = _state['next']
    msg = {'type': 'call', 'id': i, 'global': glob, 'name': name}
    if args is not _MISSING:
        msg['args'] = args
    w = _Wait()
    _pending[i] = w
    _post(json.dumps(msg))
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
                line = '  File "program.py", line ' + str(max(1, int(digits) - 1)) + rest
        elif line.startswith('  File "<prelude>"'):
            continue
        out.append(line)
    return '\n'.join(out).rstrip('\n')

def _fail(e):
    _post(json.dumps({'type': 'done', 'error': {'name': type(e).__name__, 'message': str(e), 'stack': _trace(e)}}))

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
    try:
        _check(value, 'the returned value')
    except BaseException as e:
        _fail(e)
        return
    text = json.dumps(value)
    limit = _state['maxValueBytes']
    if len(text) > limit:
        _post(json.dumps({'type': 'done', 'value': text[:limit], 'rendered': True, 'oversized': True}))
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
_pub = {'__name__': '_toolyard', '_post': _tyhost.post, 'json': json, 'asyncio': asyncio, '_StringIO': io.StringIO, '_print_exception': sys.print_exception}
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
