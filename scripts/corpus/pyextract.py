"""Static extraction of FastMCP-style tool definitions from Python source (never imports or runs it).

Reads `@<x>.tool(...)` decorated functions with the stdlib `ast` parser: the tool's name (the
decorator's `name=` or the function's name), its description (the decorator's `description=` or
the cleaned docstring, as FastMCP does), and an input schema rebuilt from the signature (parameter
names, simple annotation types, required when there is no default). Python 3.11 stdlib only.
"""
import ast
import inspect

_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean",
          "list": "array", "List": "array", "dict": "object", "Dict": "object"}


def _type(ann):
    if ann is None:
        return None
    if isinstance(ann, ast.Name):
        return _TYPES.get(ann.id)
    if isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Name):
        return _TYPES.get(ann.value.id)
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        return _TYPES.get(ann.value)
    return None


def _const(node, consts):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and node.id in consts:
        return consts[node.id]
    if isinstance(node, ast.JoinedStr):
        out = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                out.append(str(v.value))
            elif isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Name) and v.value.id in consts:
                out.append(consts[v.value.id])
            else:
                return None
        return "".join(out)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = _const(node.left, consts), _const(node.right, consts)
        return a + b if a is not None and b is not None else None
    return None


def _is_tool_decorator(dec):
    f = dec.func if isinstance(dec, ast.Call) else dec
    return isinstance(f, ast.Attribute) and f.attr == "tool"


def extract(source: str):
    tree = ast.parse(source)
    consts = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            v = _const(node.value, consts)
            if v is not None:
                consts[node.targets[0].id] = v
    tools = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        decs = [d for d in node.decorator_list if _is_tool_decorator(d)]
        if not decs:
            continue
        dec = decs[0]
        name, desc = node.name, None
        if isinstance(dec, ast.Call):
            for kw in dec.keywords:
                if kw.arg == "name":
                    name = _const(kw.value, consts) or name
                elif kw.arg == "description":
                    desc = _const(kw.value, consts)
            if dec.args:
                name = _const(dec.args[0], consts) or name
        if desc is None:
            doc = ast.get_docstring(node, clean=False)
            desc = inspect.cleandoc(doc) if doc else None
        args = node.args
        params = args.posonlyargs + args.args + args.kwonlyargs
        defaults = [None] * (len(args.posonlyargs + args.args) - len(args.defaults)) + list(args.defaults) + list(args.kw_defaults)
        props, required = {}, []
        for a, d in zip(params, defaults):
            if a.arg in ("self", "ctx", "context") and (a.annotation is None or "Context" in ast.unparse(a.annotation)):
                continue
            p = {"title": a.arg.replace("_", " ").title()}
            t = _type(a.annotation)
            if t:
                p["type"] = t
            props[a.arg] = p
            if d is None:
                required.append(a.arg)
        schema = {"type": "object", "properties": props}
        if required:
            schema["required"] = required
        tool = {"name": name}
        if desc is not None:
            tool["description"] = desc
        tool["inputSchema"] = schema
        tools.append((node.lineno, tool))
    return [t for _, t in sorted(tools, key=lambda x: x[0])]
