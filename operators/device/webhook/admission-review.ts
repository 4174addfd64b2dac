// AdmissionReview v1 in and out: the request checked as far as the answer depends on it, the
// response built as kube-apiserver expects (uid echoed, patch base64-encoded JSON Patch).
import { type DevinitSettings, devinitPatch } from "./mutate.ts";

export class BadReviewError extends Error {}

interface Review {
  apiVersion: "admission.k8s.io/v1";
  kind: "AdmissionReview";
  request: { uid: string; kind?: { kind?: string }; object?: unknown };
}

function parseReview(body: unknown): Review {
  const review = body as Partial<Review> | null;
  if (typeof review !== "object" || review === null)
    throw new BadReviewError("the body is not a JSON object");
  if (review.apiVersion !== "admission.k8s.io/v1" || review.kind !== "AdmissionReview")
    throw new BadReviewError("expected apiVersion admission.k8s.io/v1, kind AdmissionReview");
  const uid = review.request?.uid;
  if (typeof uid !== "string" || uid === "") throw new BadReviewError("request.uid is missing");
  return review as Review;
}

/** The AdmissionReview answering `body`: always allowed, with the devinit patch for device pods. */
export function answerReview(body: unknown, settings: DevinitSettings): object {
  const review = parseReview(body);
  const { uid, kind, object } = review.request;
  const response: Record<string, unknown> = { uid, allowed: true };
  if (kind?.kind === "Pod" && typeof object === "object" && object !== null) {
    const patch = devinitPatch(object, settings);
    if (patch.length > 0) {
      response.patchType = "JSONPatch";
      response.patch = Buffer.from(JSON.stringify(patch)).toString("base64");
    }
  }
  return { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", response };
}
