// The platformctl verbs, in the order `platformctl --help` lists them.
import { completionVerb } from "../completion.js";
import { completeNamesVerb } from "./complete-names.js";
import type { CommandModule } from "../program.js";
import { apiResourcesVerb } from "./api-resources.js";
import { applyVerb } from "./apply.js";
import { authVerb } from "./auth.js";
import { certificateVerb } from "./certificate.js";
import { createVerb } from "./create.js";
import { deleteVerb } from "./delete.js";
import { describeVerb } from "./describe.js";
import { getVerb } from "./get.js";
import { patchVerb } from "./patch.js";
import { versionVerb } from "./version.js";

export const CTL_VERBS: readonly CommandModule[] = [
  getVerb, describeVerb, createVerb, applyVerb, patchVerb, deleteVerb, certificateVerb, authVerb, apiResourcesVerb, versionVerb, completionVerb, completeNamesVerb,
];
