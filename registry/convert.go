package registry

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
)

// eventToCore is kube's conversion of an events.k8s.io/v1 Event to the
// core Event it is stored as: the same fields under their older names.
func eventToCore(in *eventsv1.Event) *corev1.Event {
	out := &corev1.Event{
		ObjectMeta: *in.ObjectMeta.DeepCopy(), InvolvedObject: in.Regarding, Related: in.Related,
		Message: in.Note, Reason: in.Reason, Type: in.Type, Action: in.Action, EventTime: in.EventTime,
		ReportingController: in.ReportingController, ReportingInstance: in.ReportingInstance,
		Source: in.DeprecatedSource, FirstTimestamp: in.DeprecatedFirstTimestamp,
		LastTimestamp: in.DeprecatedLastTimestamp, Count: in.DeprecatedCount,
	}
	out.APIVersion, out.Kind = coreV1.String(), "Event"
	if in.Series != nil {
		out.Series = &corev1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	return out
}

// eventFromCore is eventToCore's inverse.
func eventFromCore(in *corev1.Event) *eventsv1.Event {
	out := &eventsv1.Event{
		ObjectMeta: *in.ObjectMeta.DeepCopy(), Regarding: in.InvolvedObject, Related: in.Related,
		Note: in.Message, Reason: in.Reason, Type: in.Type, Action: in.Action, EventTime: in.EventTime,
		ReportingController: in.ReportingController, ReportingInstance: in.ReportingInstance,
		DeprecatedSource: in.Source, DeprecatedFirstTimestamp: in.FirstTimestamp,
		DeprecatedLastTimestamp: in.LastTimestamp, DeprecatedCount: in.Count,
	}
	out.APIVersion, out.Kind = eventsv1.SchemeGroupVersion.String(), "Event"
	if in.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	return out
}

// hpaV1ToV2 stores an autoscaling/v1 HorizontalPodAutoscaler as v2: its
// CPU target is v2's CPU utilization metric. (kube also carries v2-only
// metrics through v1 in annotations; kubelab does not, so a v1 write of
// an autoscaler with other metrics keeps only the CPU one.)
func hpaV1ToV2(in *autoscalingv1.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscaler {
	out := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: *in.ObjectMeta.DeepCopy()}
	out.APIVersion, out.Kind = autoscalingv2.SchemeGroupVersion.String(), "HorizontalPodAutoscaler"
	ref := in.Spec.ScaleTargetRef
	out.Spec = autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: ref.Kind, Name: ref.Name, APIVersion: ref.APIVersion},
		MinReplicas:    in.Spec.MinReplicas, MaxReplicas: in.Spec.MaxReplicas,
	}
	if t := in.Spec.TargetCPUUtilizationPercentage; t != nil {
		out.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: t},
		}}}
	}
	out.Status = autoscalingv2.HorizontalPodAutoscalerStatus{
		ObservedGeneration: in.Status.ObservedGeneration, LastScaleTime: in.Status.LastScaleTime,
		CurrentReplicas: in.Status.CurrentReplicas, DesiredReplicas: in.Status.DesiredReplicas,
	}
	if c := in.Status.CurrentCPUUtilizationPercentage; c != nil {
		out.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
			Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: c},
		}}}
	}
	return out
}

// hpaV2ToV1 is hpaV1ToV2's inverse, reading the CPU utilization metric.
func hpaV2ToV1(in *autoscalingv2.HorizontalPodAutoscaler) *autoscalingv1.HorizontalPodAutoscaler {
	out := &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: *in.ObjectMeta.DeepCopy()}
	out.APIVersion, out.Kind = autoscalingv1.SchemeGroupVersion.String(), "HorizontalPodAutoscaler"
	ref := in.Spec.ScaleTargetRef
	out.Spec = autoscalingv1.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{Kind: ref.Kind, Name: ref.Name, APIVersion: ref.APIVersion},
		MinReplicas:    in.Spec.MinReplicas, MaxReplicas: in.Spec.MaxReplicas,
	}
	for _, m := range in.Spec.Metrics {
		if m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Target.AverageUtilization != nil {
			out.Spec.TargetCPUUtilizationPercentage = m.Resource.Target.AverageUtilization
			break
		}
	}
	out.Status = autoscalingv1.HorizontalPodAutoscalerStatus{
		ObservedGeneration: in.Status.ObservedGeneration, LastScaleTime: in.Status.LastScaleTime,
		CurrentReplicas: in.Status.CurrentReplicas, DesiredReplicas: in.Status.DesiredReplicas,
	}
	for _, m := range in.Status.CurrentMetrics {
		if m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Current.AverageUtilization != nil {
			out.Status.CurrentCPUUtilizationPercentage = m.Resource.Current.AverageUtilization
			break
		}
	}
	return out
}
