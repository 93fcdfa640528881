package controlplane

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kubelab/kubelab/server/kubeapi"
)

// serviceAccountWait bounds the wait for the service-account controller
// to make the lesson namespace's default ServiceAccount, without which
// kube's ServiceAccount admission refuses pods.
const serviceAccountWait = 30 * time.Second

// seedLesson makes the lesson's namespace and pods on first start, as
// kubelab's own core does (kubeapi.SeedDemo), with the same requests:
// ssa-demo applied by manager-a, the others created. Once the namespace
// exists (even emptied by a student) it is left alone. It runs once the
// controllers run: pods wait for the namespace's default ServiceAccount.
func seedLesson(ctx context.Context, loopback *rest.Config, client kubernetes.Interface) error {
	_, err := client.CoreV1().Namespaces().Get(ctx, kubeapi.DemoNamespace, metav1.GetOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	dyn, err := dynamic.NewForConfig(loopback)
	if err != nil {
		return err
	}
	accountMade := false
	for _, sd := range kubeapi.DemoSeeds(kubeapi.DemoNamespace, nil) {
		if sd.Resource == corev1.SchemeGroupVersion.WithResource("pods") && !accountMade {
			if err := waitForDefaultServiceAccount(ctx, client, sd.Namespace); err != nil {
				return err
			}
			accountMade = true
		}
		var obj unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(sd.Manifest), &obj.Object); err != nil {
			return fmt.Errorf("the lesson's %s: %w", sd.Resource.Resource, err)
		}
		resource := dyn.Resource(sd.Resource).Namespace(sd.Namespace)
		if sd.Apply {
			_, err = resource.Apply(ctx, obj.GetName(), &obj, metav1.ApplyOptions{FieldManager: sd.FieldManager})
		} else {
			_, err = resource.Create(ctx, &obj, metav1.CreateOptions{FieldManager: sd.FieldManager})
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("making the lesson's %s %s: %w", sd.Resource.Resource, obj.GetName(), err)
		}
	}
	return nil
}

// waitForDefaultServiceAccount waits until the service-account controller
// has made namespace ns's default ServiceAccount.
func waitForDefaultServiceAccount(ctx context.Context, client kubernetes.Interface, ns string) error {
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, serviceAccountWait, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("the lesson namespace's default ServiceAccount: %w", err)
	}
	return nil
}
