// Package pipeline is the request pipeline every API request goes
// through, in the lesson's order: authentication, authorization (RBAC),
// mutating admission, validation, validating admission, storage. Each
// stage is a small interface declared here and implemented in a
// subpackage (authn, rbac, admission); each stage leaves a Record in the
// request's Trace, which a trace.Bus carries to the browser.
//
// A server wires it per request like this (errors are Status errors, so
// the server's one error handler renders them as kube-apiserver would):
//
//	tr := pipeline.NewTrace(r)                 // ID goes out in the Audit-Id header
//	user, err := p.Authenticate(tr, r)         // 401 Unauthorized
//	attrs := &pipeline.Attributes{User: user, ...} // from the parsed URL
//	tr.Describe(attrs)
//	err = p.Authorize(tr, attrs)               // 403 Forbidden, kube's message
//	// decode the body, apply defaults, then for create/update/patch/delete:
//	attrs.Object, attrs.OldObject = obj, old
//	err = p.Admit(ctx, tr, attrs)              // mutating plugins
//	err = tr.Run(pipeline.StageValidation, "", func() error { return validate(obj) })
//	err = p.Validate(ctx, tr, attrs)           // validating plugins
//	err = tr.Run(pipeline.StageStorage, "etcd", func() error { ... })
//	tr.Last().ResourceVersion = rv
//	p.Finish(tr, code)                         // once the response is written: publishes the trace
package pipeline
