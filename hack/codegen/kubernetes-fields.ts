// The field names of every Kubernetes type reachable from PodTemplateSpec, read from
// kubernetes-models' type declarations with the TypeScript compiler. The Kubernetes OpenAPI
// schema allows unknown fields, so its validators miss a typo such as `imagee`; this table lets
// checkSchema report them the way `kubectl apply --validate=strict` and `kubeconform -strict` do.
import { fileURLToPath } from "node:url";
import ts from "typescript";

function declarationFile(module: string): string {
  return fileURLToPath(import.meta.resolve(module)).replace(/\.js$/, ".d.ts");
}

/** Type name → field → the field's object type, or null for scalars and maps. */
export type FieldTable = Record<string, Record<string, string | null>>;

export const ROOTS = { PodTemplateSpec: "kubernetes-models/v1/PodTemplateSpec" } as const;

function shortName(symbol: ts.Symbol): string {
  return symbol.getName().replace(/^I(?=[A-Z])/, "");
}

export function kubernetesFieldTable(): FieldTable {
  const files = Object.values(ROOTS).map(declarationFile);
  const program = ts.createProgram(files, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
  });
  const checker = program.getTypeChecker();
  const table: FieldTable = {};
  const origin = new Map<string, string>();

  const objectTypeOf = (type: ts.Type): ts.Type | undefined => {
    let candidate = type.getNonNullableType();
    if (checker.isArrayType(candidate))
      candidate = checker.getTypeArguments(candidate as ts.TypeReference)[0]!;
    candidate = candidate.getNonNullableType();
    if (candidate.isUnion() || !(candidate.flags & ts.TypeFlags.Object)) return undefined;
    // Maps (labels, resource lists) take any key.
    if (checker.getIndexInfosOfType(candidate).length > 0) return undefined;
    if (checker.getPropertiesOfType(candidate).length === 0) return undefined;
    return candidate;
  };

  const visit = (type: ts.Type): string => {
    const symbol = type.aliasSymbol ?? type.getSymbol();
    if (!symbol) throw new Error(`anonymous Kubernetes type ${checker.typeToString(type)}`);
    const name = shortName(symbol);
    const where = checker.getFullyQualifiedName(symbol);
    const seen = origin.get(name);
    if (seen !== undefined) {
      if (seen !== where) throw new Error(`two Kubernetes types named ${name}: ${seen} and ${where}`);
      return name;
    }
    origin.set(name, where);
    const fields: Record<string, string | null> = {};
    table[name] = fields;
    for (const property of checker.getPropertiesOfType(type)) {
      const declaration = property.valueDeclaration;
      if (!declaration) continue;
      const propertyType = checker.getTypeOfSymbolAtLocation(property, declaration);
      // Model classes carry methods (validate, toJSON); only data fields count.
      if (propertyType.getCallSignatures().length > 0) continue;
      const objectType = objectTypeOf(propertyType);
      fields[property.getName()] = objectType ? visit(objectType) : null;
    }
    return name;
  };

  for (const [root, module] of Object.entries(ROOTS)) {
    const file = program.getSourceFile(declarationFile(module));
    if (!file) throw new Error(`cannot read ${module}`);
    const moduleSymbol = checker.getSymbolAtLocation(file);
    const exported =
      moduleSymbol && checker.getExportsOfModule(moduleSymbol).find((s) => s.getName() === `I${root}`);
    if (!exported) throw new Error(`${module} does not export I${root}`);
    visit(checker.getDeclaredTypeOfSymbol(exported));
  }
  const sorted: FieldTable = {};
  for (const name of Object.keys(table).sort()) {
    const fields = table[name]!;
    sorted[name] = Object.fromEntries(
      Object.keys(fields)
        .sort()
        .map((f) => [f, fields[f]!]),
    );
  }
  return sorted;
}

export function renderKubernetesFields(): string {
  return `${JSON.stringify(kubernetesFieldTable(), null, 1)}\n`;
}
