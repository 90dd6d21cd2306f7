// SPDX-License-Identifier: Apache-2.0
// cert-manager's own controllers, run as host processes for the node e2e.
//
// cert-manager publishes its binaries' modules (cmd/controller, cmd/cainjector) nowhere a
// Go module proxy can serve, only its library module; this file is the small main that
// their cmd packages hold: it starts the library's registered controllers (issuers with
// the selfSigned and CA kinds, certificates-*, certificaterequests-issuer-{selfsigned,ca},
// the approver) and the CA injector for MutatingWebhookConfigurations. Usage:
//
//	cert-manager controller KUBECONFIG
//	cert-manager cainjector KUBECONFIG
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	admissionreg "k8s.io/api/admissionregistration/v1"
	apiext "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	apireg "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	"github.com/cert-manager/cert-manager/pkg/metrics"

	// each registers its controller with controller.Known()
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	// and the issuer kinds the issuers controller knows
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

func runControllers(ctx context.Context, kubeconfig string) error {
	log := klog.Background()
	opts := controller.ContextOptions{
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   50,
		KubernetesAPIBurst: 100,
		Clock:              clock.RealClock{},
		Metrics:            metrics.New(log, clock.RealClock{}),
	}
	opts.ClusterResourceNamespace = "cert-manager"
	factory, err := controller.NewContextFactory(ctx, opts)
	if err != nil {
		return err
	}
	errs := make(chan error, len(controller.Known()))
	for name, construct := range controller.Known() {
		c, err := construct(factory)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		log.Info("starting controller", "controller", name)
		go func(name string, c controller.Interface) {
			if err := c.Run(2, ctx); err != nil {
				errs <- fmt.Errorf("%s: %w", name, err)
			}
		}(name, c)
	}
	base, err := factory.Build()
	if err != nil {
		return err
	}
	base.SharedInformerFactory.Start(ctx.Done())
	base.KubeSharedInformerFactory.Start(ctx.Done())
	base.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	select {
	case err := <-errs:
		return err
	case <-ctx.Done():
		return nil
	}
}

func runInjector(ctx context.Context, kubeconfig string) error {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme,
		cmapi.AddToScheme, apiext.AddToScheme, apireg.AddToScheme, admissionreg.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	os.Setenv("KUBECONFIG", kubeconfig)
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme,
		Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return err
	}
	err = cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor:        map[string]bool{cainjector.MutatingWebhookConfigurationName: true},
	})
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

func main() {
	if len(os.Args) != 3 || (os.Args[1] != "controller" && os.Args[1] != "cainjector") {
		fmt.Fprintln(os.Stderr, "usage: cert-manager controller|cainjector KUBECONFIG")
		os.Exit(2)
	}
	ctrl.SetLogger(klog.Background())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	run := runControllers
	if os.Args[1] == "cainjector" {
		run = runInjector
	}
	if err := run(ctx, os.Args[2]); err != nil {
		fmt.Fprintf(os.Stderr, "cert-manager %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
